#include "hub/remote_write_buffer_pool.h"

#include <algorithm>
#include <bit>
#include <fmt/format.h>
#include <functional>
#include <stdexcept>

#include "sim/error.h"

namespace moehub {

size_t RemoteWriteBufferPool::KeyHash::operator()(const Key& k) const {
  uint64_t x = k.line * 0x9E3779B97F4A7C15ULL;
  x ^= (k.line_in_row + (static_cast<uint64_t>(k.malloc_bits) << 20)) * 0xC2B2AE3D27D4EB4FULL;
  x ^= (static_cast<uint64_t>(k.rowsp) << 1) | static_cast<uint64_t>(k.nop);
  return static_cast<size_t>(x ^ (x >> 31));
}

RemoteWriteBufferPool::RemoteWriteBufferPool(const RpmConfig& config, uint32_t peers) : cfg_(config), parts_(peers) {
  if (peers == 0) throw std::logic_error("RemoteWriteBufferPool: no peers");
  if (peers > cfg_.partitions) {
    throw UserError("hub.rpm.partitions",
                    fmt::format("{} peers need {} buffer partitions; the hub has {}", peers, peers, cfg_.partitions));
  }
  if (cfg_.entry_bytes == 0 || cfg_.mask_granule_bytes == 0 || cfg_.entry_bytes % cfg_.mask_granule_bytes != 0 ||
      cfg_.entry_bytes / cfg_.mask_granule_bytes > 64) {
    throw std::logic_error("RemoteWriteBufferPool: entry_bytes must be 1 to 64 whole granules");
  }
  if (cfg_.entries_per_peer >= (1u << kSlotBits)) throw std::logic_error("RemoteWriteBufferPool: too many entries per peer");
  granules_ = cfg_.entry_bytes / cfg_.mask_granule_bytes;
  full_mask_ = granules_ == 64 ? ~uint64_t{0} : (uint64_t{1} << granules_) - 1;
  // The index starts small and doubles with the live entries (at most half full), up to the
  // size the configured entries need.
  const size_t index_size = std::min<size_t>(std::bit_ceil(static_cast<size_t>(cfg_.entries_per_peer) * 2), 256);
  for (Partition& p : parts_) p.index.assign(index_size, 0);
}

uint32_t RemoteWriteBufferPool::available(const Partition& p) const { return cfg_.entries_per_peer - p.used; }

// Released slots first (the most recently released), then the lowest never-used one.
uint32_t RemoteWriteBufferPool::take_slot(Partition& p) {
  if (!p.free.empty()) {
    const uint32_t s = p.free.back();
    p.free.pop_back();
    return s;
  }
  p.slots.emplace_back();
  return static_cast<uint32_t>(p.slots.size() - 1);
}

uint32_t RemoteWriteBufferPool::find(const Partition& p, const Key& key) const {
  const size_t mask = p.index.size() - 1;
  for (size_t i = KeyHash{}(key) & mask;; i = (i + 1) & mask) {
    const uint32_t v = p.index[i];
    if (v == 0) return kNoSlot;
    if (p.slots[v - 1].key == key) return v - 1;
  }
}

void RemoteWriteBufferPool::index_insert(Partition& p, const Key& key, uint32_t slot) {
  const size_t live = p.slots.size() - p.free.size();  // includes `slot`
  if (live * 2 > p.index.size()) {
    std::vector<uint32_t> old(p.index.size() * 2, 0);
    old.swap(p.index);
    const size_t grown = p.index.size() - 1;
    for (const uint32_t v : old) {
      if (v == 0) continue;
      size_t i = KeyHash{}(p.slots[v - 1].key) & grown;
      while (p.index[i] != 0) i = (i + 1) & grown;
      p.index[i] = v;
    }
  }
  const size_t mask = p.index.size() - 1;
  size_t i = KeyHash{}(key) & mask;
  while (p.index[i] != 0) i = (i + 1) & mask;
  p.index[i] = slot + 1;
}

// Backward-shift deletion keeps every probe sequence unbroken without tombstones.
void RemoteWriteBufferPool::index_erase(Partition& p, const Key& key) {
  const size_t mask = p.index.size() - 1;
  size_t i = KeyHash{}(key) & mask;
  while (p.slots[p.index[i] - 1].key != key) i = (i + 1) & mask;
  for (size_t j = (i + 1) & mask; p.index[j] != 0; j = (j + 1) & mask) {
    const size_t home = KeyHash{}(p.slots[p.index[j] - 1].key) & mask;
    // Entry j may move into the hole at i if its home is not in the cyclic range (i, j].
    const bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (stays) continue;
    p.index[i] = p.index[j];
    i = j;
  }
  p.index[i] = 0;
}

RemoteWriteBufferPool::Order RemoteWriteBufferPool::order_of(const Entry& e, uint32_t slot) const {
  const uint64_t minor = e.key.rowsp ? e.key.line_in_row : 0;
  if (minor >> 32) throw std::logic_error("RPM: line within a row beyond 32 bits");
  const Order cls = e.key.nop ? 1 : 0;
  const Order kind = e.key.rowsp ? 1 : 0;
  const Order major = e.key.rowsp ? e.key.line : e.seq;
  return cls << 127 | kind << 126 | major << 62 | static_cast<Order>(minor) << kSlotBits | slot;
}

void RemoteWriteBufferPool::make_ready(Partition& p, uint32_t slot) {
  Entry& e = p.slots[slot];
  if (e.ready) return;
  e.ready = true;
  const Order o = order_of(e, slot);
  p.ready.insert(std::lower_bound(p.ready.begin(), p.ready.end(), o, std::greater<>()), o);
}

bool RemoteWriteBufferPool::try_insert(uint32_t peer, const RemoteStore& s, Time now) {
  if (peer >= parts_.size()) throw std::logic_error(fmt::format("RPM: no partition for peer {}", peer));
  if (s.bytes == 0) throw std::logic_error("RPM: a store of zero bytes");
  const uint64_t start = s.rowsp ? s.row_offset : s.address;
  const uint32_t g = cfg_.mask_granule_bytes;
  if (start % g != 0 || s.bytes % g != 0) {
    throw UserError("hub.rpm.mask_granule_bytes",
                    fmt::format("a {} B store at {} is not made of whole {} B granules", s.bytes, start, g));
  }
  Partition& p = parts_[peer];
  std::vector<Piece>& pieces = pieces_;
  pieces.clear();
  uint32_t new_entries = 0;
  for (uint64_t at = start, end = start + s.bytes; at < end;) {
    const uint64_t line = at / cfg_.entry_bytes;
    const uint64_t line_end = std::min<uint64_t>(end, (line + 1) * cfg_.entry_bytes);
    const uint64_t first = (at % cfg_.entry_bytes) / g;
    const uint64_t count = (line_end - at) / g;
    const uint64_t mask = (count == 64 ? ~uint64_t{0} : ((uint64_t{1} << count) - 1)) << first;
    Key key = s.rowsp ? Key{true, s.nop, s.malloc_id.bits(), s.row_id, line}
                      : Key{false, s.nop, 0, line * cfg_.entry_bytes, 0};
    const uint32_t slot = find(p, key);
    if (slot == kNoSlot) ++new_entries;
    pieces.push_back(Piece{key, mask, slot});
    at = line_end;
  }
  if (new_entries > available(p)) return false;

  ++stores_;
  for (const Piece& piece : pieces) {
    uint32_t slot = piece.slot;  // a store's pieces are distinct lines: no piece creates another's entry
    if (slot != kNoSlot) {
      ++merges_;
    } else {
      slot = take_slot(p);
      ++buffered_;
      ++p.used;
      p.latest = slot;
      Entry& e = p.slots[slot];
      e = Entry{piece.key, 0, 0, now, next_seq_++, true, false};
      index_insert(p, piece.key, slot);
      // An entry a store fills whole is never partial: no place in the age order.
      if (piece.mask != full_mask_) p.partial_by_age.emplace_back(e.seq, slot);
    }
    Entry& e = p.slots[slot];
    const bool was_full = piece.slot != kNoSlot && e.mask == full_mask_;
    e.mask |= piece.mask;
    ++e.pieces;
    if (piece.slot == kNoSlot && e.mask != full_mask_) ++non_full_;
    if (piece.slot != kNoSlot && !was_full && e.mask == full_mask_) --non_full_;
    if (e.mask == full_mask_) make_ready(p, slot);
  }
  return true;
}

bool RemoteWriteBufferPool::try_insert_run(uint32_t peer, const RemoteStore& s, uint32_t lines, uint32_t transactions,
                                           uint32_t max_lines, Time now) {
  if (peer >= parts_.size()) throw std::logic_error(fmt::format("RPM: no partition for peer {}", peer));
  const uint64_t start = s.rowsp ? s.row_offset : s.address;
  if (lines == 0 || transactions < lines || start % cfg_.entry_bytes != 0 ||
      s.bytes != static_cast<uint64_t>(lines) * cfg_.entry_bytes) {
    throw std::logic_error("RPM: a run is whole lines from a line boundary");
  }
  Partition& p = parts_[peer];
  const uint64_t line = start / cfg_.entry_bytes;
  const Key key = s.rowsp ? Key{true, s.nop, s.malloc_id.bits(), s.row_id, line} : Key{false, s.nop, 0, start, 0};
  if (lines > available(p)) return false;
  // A line already buffered (written twice before it left) merges as the exact model does.
  if (find(p, key) != kNoSlot) return try_insert(peer, s, now);
  stores_ += transactions;
  merges_ += transactions - lines;
  p.used += lines;
  // Lines that continue the latest run of the same row join it: a row the partition refilled
  // piecemeal (as its entries freed) would otherwise leave as many small runs. Same class and
  // row; the run is still buffered, so it has not begun to leave. st. runs never join: the
  // combine's next stores (the token's next tile columns, from other blocks) would grow a waiting
  // run to the limit and leave up to 8 stores' lines in one partition's turn (+2.4 % on mh-pkt's
  // layer at 64 GPUs x 64 tokens per GPU; docs/performance/scale-out.md, hubst session 29).
  if (s.rowsp && p.latest != UINT32_MAX) {
    Entry& last = p.slots[p.latest];
    Key next = last.key;
    next.line_in_row += last.lines;
    if (last.live && last.lines > 0 && last.mask == full_mask_ && next == key && last.lines + lines <= max_lines) {
      last.lines += lines;
      last.pieces += transactions;
      return true;
    }
  }
  const uint32_t slot = take_slot(p);
  ++buffered_;
  p.latest = slot;
  p.slots[slot] = Entry{key, full_mask_, transactions, now, next_seq_++, true, false, lines};
  index_insert(p, key, slot);
  make_ready(p, slot);
  return true;
}

void RemoteWriteBufferPool::drop_stale_partials(Partition& p) {
  while (!p.partial_by_age.empty()) {
    const auto [seq, slot] = p.partial_by_age.front();
    const Entry& e = p.slots[slot];
    if (e.live && e.seq == seq && !e.ready) return;
    p.partial_by_age.pop_front();
  }
}

std::optional<Time> RemoteWriteBufferPool::next_deadline(uint32_t peer) {
  if (cfg_.timer_bypass == Time::zero()) return std::nullopt;
  Partition& p = parts_[peer];
  drop_stale_partials(p);
  if (p.partial_by_age.empty()) return std::nullopt;
  return p.slots[p.partial_by_age.front().second].created + cfg_.timer_bypass;
}

std::optional<RemoteWriteBufferPool::Pick> RemoteWriteBufferPool::candidate(uint32_t peer, Time now) {
  Partition& p = parts_[peer];
  if (const auto due = next_deadline(peer); due && *due <= now) return Pick{p.partial_by_age.front().second, true};
  if (p.ready.empty()) return std::nullopt;
  const Order best = p.ready.back();
  const bool ordinary_first = (best >> 126) == 0;  // priority class, plain st.
  if (p.sending && !ordinary_first) {
    Key next = *p.sending;
    ++next.line_in_row;
    const uint32_t slot = find(p, next);
    if (slot != kNoSlot && p.slots[slot].ready) return Pick{slot, false};
  }
  return Pick{slot_of(best), false};
}

HubPacket RemoteWriteBufferPool::packet(uint32_t peer, const Pick& pick) const {
  const Entry& e = parts_[peer].slots[pick.slot];
  if (!e.live) throw std::logic_error("RPM: packet from a free entry");
  HubPacket pkt;
  pkt.peer = peer;
  pkt.rowsp = e.key.rowsp;
  pkt.nop = e.key.nop;
  if (e.key.rowsp) {
    pkt.malloc_id = MallocId::from_bits(e.key.malloc_bits);
    pkt.row_id = e.key.line;
    pkt.row_offset = e.key.line_in_row * cfg_.entry_bytes;
  } else {
    pkt.address = e.key.line;
  }
  pkt.valid_mask = e.mask;
  pkt.granule_bytes = cfg_.mask_granule_bytes;
  pkt.payload_bytes = payload_bytes(peer, pick) * e.lines;
  pkt.lines = e.lines;
  pkt.stores_merged = e.pieces;
  pkt.first_store = e.created;
  pkt.timer_bypass = pick.bypass;
  pkt.flushed = !pick.bypass && e.mask != full_mask_;
  return pkt;
}

void RemoteWriteBufferPool::take(uint32_t peer, const Pick& pick) {
  Partition& p = parts_[peer];
  Entry& e = p.slots[pick.slot];
  if (!e.live) throw std::logic_error("RPM: take of a free entry");
  if (e.ready) {
    if (!p.ready.empty() && slot_of(p.ready.back()) == pick.slot) {
      p.ready.pop_back();  // the usual case: the scheduler took the entry candidate() named
    } else {
      const Order o = order_of(e, pick.slot);
      const auto it = std::lower_bound(p.ready.begin(), p.ready.end(), o, std::greater<>());
      if (it == p.ready.end() || *it != o) throw std::logic_error("RPM: ready entry missing from the send order");
      p.ready.erase(it);
    }
  }
  if (e.key.rowsp && !e.key.nop) {
    p.sending = e.key;
    p.sending->line_in_row += e.lines - 1;  // a run: its row goes on after its last line
  }
  index_erase(p, e.key);
  e.live = false;
  p.used -= e.lines;
  if (e.mask != full_mask_) --non_full_;
  p.free.push_back(pick.slot);
  --buffered_;
}

void RemoteWriteBufferPool::flush() {
  for (Partition& p : parts_) {
    for (uint32_t s = 0; s < p.slots.size(); ++s) {
      if (p.slots[s].live) make_ready(p, s);
    }
  }
}

uint32_t RemoteWriteBufferPool::free_entries(uint32_t peer) const {
  return available(parts_[peer]);
}

}  // namespace moehub
