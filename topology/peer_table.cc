#include "topology/peer_table.h"

#include <algorithm>

namespace meshlearn::topology {

const char* LivenessName(Liveness liveness) {
  switch (liveness) {
    case Liveness::kCandidate:
      return "candidate";
    case Liveness::kAlive:
      return "alive";
    case Liveness::kDead:
      return "dead";
    case Liveness::kProbation:
      return "probation";
    case Liveness::kLeft:
      return "left";
  }
  return "unknown";
}

PeerTable::PeerTable(std::string self, int dead_after_failures, Clock::duration base_backoff,
                     Clock::duration max_backoff)
    : self_(std::move(self)),
      dead_after_failures_(std::max(1, dead_after_failures)),
      base_backoff_(base_backoff),
      max_backoff_(max_backoff) {}

bool PeerTable::Learn(const std::string& id, const std::string& endpoint,
                      const std::string& public_key, bool pinned) {
  if (id.empty() || id == self_) return false;
  auto it = peers_.find(id);
  if (it != peers_.end()) {
    PeerEntry& e = it->second;
    e.pinned = e.pinned || pinned;
    if (e.active) return false;
    e.endpoint = endpoint;
    if (!public_key.empty()) e.public_key = public_key;
    return false;
  }
  PeerEntry entry;
  entry.id = id;
  entry.endpoint = endpoint;
  entry.public_key = public_key;
  entry.pinned = pinned;
  peers_.emplace(id, std::move(entry));
  return true;
}

void PeerTable::MarkActive(std::string_view id) {
  auto it = peers_.find(id);
  if (it == peers_.end()) return;
  if (!it->second.active) ++verified_;
  it->second.active = true;
  it->second.left = false;
}

void PeerTable::MoveVerified(std::string_view id, const std::string& endpoint,
                             const std::string& public_key) {
  auto it = peers_.find(id);
  if (it == peers_.end() || !it->second.active) return;
  it->second.endpoint = endpoint;
  if (!public_key.empty()) it->second.public_key = public_key;
}

void PeerTable::MarkLeft(std::string_view id) {
  auto it = peers_.find(id);
  if (it != peers_.end()) it->second.left = true;
}

void PeerTable::Forget(std::string_view id) {
  auto it = peers_.find(id);
  if (it == peers_.end()) return;
  if (it->second.active) --verified_;
  peers_.erase(it);
}

std::optional<std::string> PeerTable::Replaceable(Clock::time_point now) const {
  std::optional<std::string> dead;
  for (const auto& [id, e] : peers_) {
    if (!e.active) continue;
    if (e.left) return id;
    if (!dead && LivenessOf(id, now) == Liveness::kDead) dead = id;
  }
  return dead;
}

void PeerTable::SetSource(std::string_view id, std::string source) {
  auto it = peers_.find(id);
  if (it != peers_.end()) it->second.source = std::move(source);
}

void PeerTable::AgeView() {
  for (auto& [id, e] : peers_) {
    if (e.active) ++e.view_age;
  }
}

void PeerTable::ResetViewAge(std::string_view id) {
  auto it = peers_.find(id);
  if (it != peers_.end()) it->second.view_age = 0;
}

void PeerTable::RecordSuccess(std::string_view id) {
  auto it = peers_.find(id);
  if (it == peers_.end()) return;
  it->second.consecutive_failures = 0;
  it->second.times_died = 0;
  ++it->second.successes_total;
}

bool PeerTable::RecordFailure(std::string_view id, Clock::time_point now) {
  auto it = peers_.find(id);
  if (it == peers_.end()) return false;
  PeerEntry& e = it->second;
  ++e.failures_total;
  ++e.consecutive_failures;
  if (e.consecutive_failures < dead_after_failures_) return false;
  // Dies now (first time) or again after a failed probation.
  auto backoff = base_backoff_;
  for (int i = 0; i < e.times_died && backoff < max_backoff_; ++i) backoff *= 2;
  e.dead_until = now + std::min(backoff, max_backoff_);
  ++e.times_died;
  return true;
}

Liveness PeerTable::LivenessOf(std::string_view id, Clock::time_point now) const {
  const PeerEntry* e = Find(id);
  if (!e || !e->active) return Liveness::kCandidate;
  if (e->left) return Liveness::kLeft;
  if (e->consecutive_failures < dead_after_failures_) return Liveness::kAlive;
  return now < e->dead_until ? Liveness::kDead : Liveness::kProbation;
}

bool PeerTable::IsSamplable(std::string_view id, Clock::time_point now) const {
  Liveness l = LivenessOf(id, now);
  return l == Liveness::kAlive || l == Liveness::kProbation;
}

const PeerEntry* PeerTable::Find(std::string_view id) const {
  auto it = peers_.find(id);
  return it == peers_.end() ? nullptr : &it->second;
}

}  // namespace meshlearn::topology
