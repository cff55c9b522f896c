#pragma once
// Remote Write Buffer Pool (paper IV-B1): the RPM's front end. One fully associative partition
// per peer; each entry holds one line (`entry_bytes`, a packet's payload) and a validity mask.
// A store merges into an entry with the same key and priority class: the cache-line address for
// st., (MallocID, RowID, RowOffset line) for st.rowsp. The pool also answers which entry of a
// partition the scheduler should send next (the policy is documented at candidate()).

#include <bit>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "hub/hub_config.h"
#include "hub/hub_packet.h"

namespace moehub {

class RemoteWriteBufferPool {
 public:
  RemoteWriteBufferPool(const RpmConfig& config, uint32_t peers);

  // Merges the store (split at line boundaries) into `peer`'s partition. False, with nothing
  // changed, when it needs more new entries than are free. UserError if the store is not made
  // of whole mask granules.
  bool try_insert(uint32_t peer, const RemoteStore& store, Time now);
  // hub.flow_line_runs (a stated reduction): a store of `lines` whole lines from a line boundary
  // joins the partition's latest entry when that is a run still buffered that it continues (the
  // same row's next lines; st. runs never join) and the two hold at most `max_lines`; else it
  // becomes one entry of its own. A run takes `lines` of the partition's entries, is ready at
  // once and leaves as one packet of its lines; it counts as `transactions` stores, merged into
  // `lines` lines. False, with nothing changed, when fewer entries are free.
  bool try_insert_run(uint32_t peer, const RemoteStore& store, uint32_t lines, uint32_t transactions, uint32_t max_lines,
                      Time now);

  struct Pick {
    uint32_t slot;
    bool bypass;
  };
  // The entry `peer` should send next, if any:
  //  1. timer bypass: the oldest partly filled entry whose age reached timer_bypass;
  //  2. otherwise among ready entries (mask full, or present at the last flush): the priority
  //     class before .nop; within a class, ordinary stores first in arrival order, then st.rowsp
  //     by smallest RowID, then by line within the row; except that
  //  3. a priority-class st.rowsp row already begun goes on while its next line is ready (the
  //     paper's aim, rows "transferred contiguously": a smaller RowID arriving mid-row would
  //     otherwise pre-empt it and leave it partly sent, its consumer tile waiting on it).
  // Partly filled entries never leave by rule 2 until they fill or are flushed.
  std::optional<Pick> candidate(uint32_t peer, Time now);
  // The packet the entry would make (and the payload of one of its lines); take() removes the entry.
  HubPacket packet(uint32_t peer, const Pick& pick) const;
  uint32_t payload_bytes(uint32_t peer, const Pick& pick) const {
    const uint64_t mask = parts_[peer].slots[pick.slot].mask;
    // Most entries leave whole; std::popcount is a library call on baseline x86-64.
    return mask == full_mask_ ? cfg_.entry_bytes : static_cast<uint32_t>(std::popcount(mask)) * cfg_.mask_granule_bytes;
  }
  void take(uint32_t peer, const Pick& pick);

  // Makes every entry now buffered ready (a fence or kernel end drains partial entries).
  void flush();
  // When the oldest partly filled entry of `peer` becomes due for the timer bypass.
  std::optional<Time> next_deadline(uint32_t peer);

  uint32_t peers() const { return static_cast<uint32_t>(parts_.size()); }
  uint32_t free_entries(uint32_t peer) const;
  size_t buffered() const { return buffered_; }  // live entries over all partitions
  // Live entries not (yet) filled whole, over all partitions: partly filled or flushed. While
  // there are none, every packet the pool could name carries a whole entry.
  size_t non_full_entries() const { return non_full_; }
  uint64_t stores() const { return stores_; }
  uint64_t merges() const { return merges_; }
  const RpmConfig& config() const { return cfg_; }

 private:
  struct Key {
    bool rowsp;
    bool nop;
    uint32_t malloc_bits;
    uint64_t line;  // st.: line address; st.rowsp: RowID
    uint64_t line_in_row;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Entry {
    Key key;
    uint64_t mask = 0;
    uint32_t pieces = 0;
    Time created;
    uint64_t seq = 0;
    bool live = false;
    bool ready = false;
    uint32_t lines = 1;  // hub.flow_line_runs: whole lines from the key's on (a run)
  };
  // (class, kind rank, major, minor, slot) packed into one integer, most significant first
  // (1, 1, 64, 32 and 30 bits): ascending order is the send order.
  using Order = unsigned __int128;
  static constexpr int kSlotBits = 30;
  static uint32_t slot_of(Order o) { return static_cast<uint32_t>(o & ((1u << kSlotBits) - 1)); }
  struct Piece {
    Key key;
    uint64_t mask;
    uint32_t slot;  // its entry, or kNoSlot for a new one
  };
  struct Partition {
    // Slots are created on first use, up to entries_per_peer, so that a large configured
    // buffer costs this program only what the run touches; `free` holds released slots.
    std::vector<Entry> slots;
    std::vector<uint32_t> free;
    uint32_t used = 0;  // entries held: one per line (a run holds its lines')
    uint32_t latest = UINT32_MAX;  // the slot of the latest entry made (runs join it)
    // Open addressing with linear probing over slot + 1 (0: empty), at most half full: a
    // store costs no allocation, unlike a node-based map.
    std::vector<uint32_t> index;
    // Sorted descending (the next to send is at the back, so taking it is a pop); at most
    // entries_per_peer long, so a flat vector beats a node-based set.
    std::vector<Order> ready;
    std::deque<std::pair<uint64_t, uint32_t>> partial_by_age;  // (seq, slot), oldest first
    std::optional<Key> sending;  // the priority st.rowsp line sent last: its row is in progress
  };

  static constexpr uint32_t kNoSlot = UINT32_MAX;
  uint32_t find(const Partition& p, const Key& key) const;
  void index_insert(Partition& p, const Key& key, uint32_t slot);
  uint32_t available(const Partition& p) const;
  uint32_t take_slot(Partition& p);
  void index_erase(Partition& p, const Key& key);
  Order order_of(const Entry& e, uint32_t slot) const;
  void make_ready(Partition& p, uint32_t slot);
  void drop_stale_partials(Partition& p);

  RpmConfig cfg_;
  uint32_t granules_;
  uint64_t full_mask_;
  std::vector<Partition> parts_;
  std::vector<Piece> pieces_;  // scratch of try_insert, kept to avoid an allocation per store
  size_t buffered_ = 0;
  size_t non_full_ = 0;
  uint64_t next_seq_ = 0;
  uint64_t stores_ = 0, merges_ = 0;
};

}  // namespace moehub
