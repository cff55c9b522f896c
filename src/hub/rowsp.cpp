#include "hub/rowsp.h"

#include <fmt/format.h>
#include <stdexcept>

namespace moehub {

MallocId MallocId::encode(uint32_t gpu, uint32_t region) {
  if (gpu >= kMaxGpus || region >= kMaxRegions) {
    throw std::logic_error(fmt::format("MallocId::encode: gpu {} or region {} does not fit 16 bits", gpu, region));
  }
  return MallocId((gpu << 16) | region);
}

const char* rowsp_error_name(RowspErrorKind kind) {
  switch (kind) {
    case RowspErrorKind::UnknownGpu: return "unknown_gpu";
    case RowspErrorKind::UnknownRegion: return "unknown_region";
    case RowspErrorKind::OffsetBeyondRow: return "offset_beyond_row";
    case RowspErrorKind::RegionOverflow: return "region_overflow";
    case RowspErrorKind::RowIdTooWide: return "row_id_too_wide";
    case RowspErrorKind::RegionTableFull: return "region_table_full";
    case RowspErrorKind::BadRegion: return "bad_region";
  }
  return "unknown";
}

}  // namespace moehub
