#pragma once
// The programming model of paper IV-A: a MallocID names a rowspMalloc region on a target GPU,
// and st.rowsp(MallocID, RowID, RowOffset) stores into a row whose place the consumer's hub
// chooses on arrival. Errors in its use are typed (RowspError) so a run can fail with a reason.

#include <cstdint>
#include <string>

#include "sim/error.h"

namespace moehub {

// Target GPU in the upper 16 bits, region id (the target hub's APT slot) in the lower 16.
class MallocId {
 public:
  constexpr MallocId() = default;
  static constexpr uint32_t kMaxGpus = 1u << 16;
  static constexpr uint32_t kMaxRegions = 1u << 16;

  // std::logic_error if either field does not fit.
  static MallocId encode(uint32_t gpu, uint32_t region);
  static constexpr MallocId from_bits(uint32_t bits) { return MallocId(bits); }

  constexpr uint32_t bits() const { return bits_; }
  constexpr uint32_t gpu() const { return bits_ >> 16; }
  constexpr uint32_t region() const { return bits_ & 0xFFFFu; }
  constexpr auto operator<=>(const MallocId&) const = default;

 private:
  constexpr explicit MallocId(uint32_t bits) : bits_(bits) {}
  uint32_t bits_ = 0;
};

// One st.rowsp as it leaves a producer thread block (bytes at RowOffset of row RowID).
struct RowspStore {
  MallocId malloc_id;
  uint64_t row_id = 0;
  uint64_t row_offset = 0;  // bytes from the start of the row
  uint32_t bytes = 0;
  bool nop = false;         // st.rowsp.nop: off the critical path, sent after priority data
};

enum class RowspErrorKind {
  UnknownGpu,      // the MallocID names a GPU that does not exist
  UnknownRegion,   // the MallocID names no live region on its GPU
  OffsetBeyondRow, // RowOffset + bytes exceeds the region's row size
  RegionOverflow,  // more distinct rows arrived than the region's capacity
  RowIdTooWide,    // RowID does not fit hub.rat.row_id_bits
  RegionTableFull, // rowspMalloc found no free APT entry on the target GPU
  BadRegion        // rowspMalloc arguments are invalid (zero row size or capacity, too many rows)
};

const char* rowsp_error_name(RowspErrorKind kind);

// A misuse of the programming model. It is a UserError (exit status 2): the region sizes and
// RowIDs come from the workload the user configured.
class RowspError : public UserError {
 public:
  RowspError(RowspErrorKind kind, std::string where, std::string reason)
      : UserError(std::move(where), std::move(reason)), kind_(kind) {}
  RowspErrorKind kind() const { return kind_; }

 private:
  RowspErrorKind kind_;
};

}  // namespace moehub
