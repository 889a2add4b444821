#include "tools/dashboard/dashboard_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "node/host/outputs.h"
#include "tools/layout/run_layout.h"
#include "tools/plot/matrix_csv.h"
#include "tools/report/bytes_to_target.h"

namespace meshlearn::dashboard {
namespace {

using nlohmann::json;

json Number(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

// One node of a method, as last seen.
struct NodeView {
  int64_t round = -1;
  double val_loss = NAN;
  std::optional<int> peers_alive;
  int peers_known = 0;
  uint64_t bytes_in = 0, bytes_out = 0, failures = 0;
  bool answering = false;
  uint16_t http_port = 0;
  std::map<int64_t, double> metric;  // round -> test metric
  int64_t rows_read = -1;            // the last round read from rounds.csv
  std::vector<int64_t> history_rounds;
  std::vector<std::vector<float>> probabilities, scores;  // per history round, node index order
};

// A row of floats over the nodes, NaN where unknown.
std::vector<float> Unknown(size_t n) { return std::vector<float>(n, NAN); }

// Reads "peer,score,probability" (scores.csv) into rows over the nodes of `index`.
Status ReadScores(const std::string& path, const std::map<std::string, size_t>& index,
                  std::vector<float>& scores, std::vector<float>& probabilities) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  auto records = ParseCsv(*text, path);
  if (!records.ok()) return records.status();
  for (size_t r = 1; r < records->size(); ++r) {  // after the header
    const CsvRecord& row = (*records)[r];
    if (row.fields.size() < 3) {
      return Status::Malformed(path + ":" + std::to_string(row.line) +
                               ": expected peer,score,probability");
    }
    auto it = index.find(row.fields[0]);
    if (it == index.end()) continue;
    // Read as the doubles they were written from, then narrowed (a tiny probability becomes 0).
    auto score = CsvNumber<double>(path, row, 1, "score", kExactNumberForm);
    if (!score.ok()) return score.status();
    auto probability = CsvNumber<double>(path, row, 2, "probability", kExactNumberForm);
    if (!probability.ok()) return probability.status();
    scores[it->second] = static_cast<float>(*score);
    probabilities[it->second] = static_cast<float>(*probability);
  }
  return Status::Ok();
}

// One method, as last seen.
struct MethodView {
  std::string name, dir;
  std::string state = "pending";  // running, done, interrupted
  std::string source;             // "status" (live) or "files"
  int64_t rounds = 0;
  double elapsed = 0;
  std::vector<NodeView> nodes;
  std::vector<double> heat;  // N x N in node index order; NaN where unknown
  std::optional<launch::EmdMatrix> emd;
  std::optional<launch::PolicyClusters> policy;
  uint64_t observations = 0;
  // Once ended: its honest nodes' mean accuracy over time (launch::AccuracyOverTime).
  std::vector<launch::TimedAccuracy> over_time;
};

// The first failed status of several reads; the later ones are dropped.
struct FirstError {
  Status status;
  void Note(const Status& read) {
    if (!read.ok() && status.ok()) status = read;
  }
};

// A finished node as its rows show it: node.rounds when the run kept them, else its rounds.csv
// (missing: nothing shown). Failures are the sampled peers that did not answer, summed.
NodeView FinishedNode(const launch::NodeRun& node, bool classification, FirstError& errors) {
  NodeView v;
  std::vector<node::RoundRow> rows = node.rounds;
  if (rows.empty()) {
    auto read = node::ReadRoundsCsv(launch::PathIn(node.dir, launch::kRoundsFile));
    if (read.ok()) {
      rows = std::move(*read);
    } else if (read.status().code() != ErrorCode::kNotFound) {
      errors.Note(read.status());
    }
  }
  for (const node::RoundRow& r : rows) {
    v.metric[r.round] = launch::Metric(r, classification);
    v.failures += static_cast<uint64_t>(std::max(0, r.sampled - r.answered));
  }
  if (!rows.empty()) {
    v.round = rows.back().round;
    v.val_loss = rows.back().val_loss;
    v.bytes_in = rows.back().bytes_in;
    v.bytes_out = rows.back().bytes_out;
    v.rows_read = v.round;
  }
  return v;
}

// The heatmap of a finished method from its nodes' comm.csv (N x N, node index order); NaN on
// the diagonal, and everywhere when there is none.
std::vector<double> FinishedHeat(const std::string& dir, const launch::Partition& p,
                                 FirstError& errors) {
  size_t n = p.ids.size();
  std::vector<double> heat(n * n, NAN);
  auto comm = plot::MergeCommCounts(dir, p.ids);
  if (comm.ok()) {
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < n; ++j) heat[i * n + j] = i == j ? NAN : comm->at(i, j);
    }
  } else if (comm.status().code() != ErrorCode::kNotFound) {
    errors.Note(comm.status());
  }
  return heat;
}

// Moves what was seen of a node live (its page's port and its per-round history) into
// `finished`, the same node read from its files.
void KeepLiveHistory(NodeView& live, NodeView& finished) {
  finished.http_port = live.http_port;
  finished.history_rounds = std::move(live.history_rounds);
  finished.probabilities = std::move(live.probabilities);
  finished.scores = std::move(live.scores);
}

// Ends v's history with the final scores of `scores_path` (scores.csv) over the n nodes of
// `index` at v's last round, replacing a live row of that round or later. Nothing when v has no
// round or the file is missing; a file that does not parse is noted.
void AppendFinalScores(NodeView& v, const std::string& scores_path,
                       const std::map<std::string, size_t>& index, size_t n, FirstError& errors) {
  std::vector<float> scores = Unknown(n), probabilities = Unknown(n);
  Status read = ReadScores(scores_path, index, scores, probabilities);
  if (read.ok() && v.round >= 0) {
    if (!v.history_rounds.empty() && v.history_rounds.back() >= v.round) {
      v.history_rounds.pop_back();
      v.probabilities.pop_back();
      v.scores.pop_back();
    }
    v.history_rounds.push_back(v.round);
    v.probabilities.push_back(std::move(probabilities));
    v.scores.push_back(std::move(scores));
  } else if (!read.ok() && read.code() != ErrorCode::kNotFound) {
    errors.Note(read);
  }
}

// A method's curves: the mean test metric per round over all nodes and per ground-truth cluster
// ({"rounds", "mean", "clusters"}; null where no node reached a round).
json CurveJson(const std::vector<NodeView>& nodes, const launch::Partition& p) {
  size_t n = p.ids.size();
  int64_t max_round = -1;
  for (const NodeView& v : nodes) {
    if (!v.metric.empty()) max_round = std::max(max_round, v.metric.rbegin()->first);
  }
  std::vector<double> total(max_round + 1, 0), count(max_round + 1, 0);
  std::vector<std::vector<double>> c_total(p.num_clusters, total), c_count(p.num_clusters, total);
  for (size_t i = 0; i < nodes.size() && i < n; ++i) {
    for (const auto& [round, value] : nodes[i].metric) {
      if (round < 0 || !std::isfinite(value)) continue;
      total[round] += value;
      count[round] += 1;
      c_total[p.clusters[i]][round] += value;
      c_count[p.clusters[i]][round] += 1;
    }
  }
  json rounds = json::array(), mean = json::array(), per_cluster = json::array();
  for (int64_t r = 0; r <= max_round; ++r) {
    rounds.push_back(r);
    mean.push_back(count[r] ? Number(total[r] / count[r]) : json(nullptr));
  }
  for (int c = 0; c < p.num_clusters; ++c) {
    json line = json::array();
    for (int64_t r = 0; r <= max_round; ++r) {
      line.push_back(c_count[c][r] ? Number(c_total[c][r] / c_count[c][r]) : json(nullptr));
    }
    per_cluster.push_back(std::move(line));
  }
  return {{"rounds", rounds}, {"mean", mean}, {"clusters", per_cluster}};
}

// One entry of /api/state's "methods": m's progress (rounds reached, time left) and curves.
json MethodSummaryJson(const MethodView& m, const launch::Partition& p) {
  std::vector<int64_t> reached;
  int64_t lo = -1, sum = 0;
  for (const NodeView& v : m.nodes) {
    reached.push_back(v.round);
    sum += std::max<int64_t>(v.round, 0);
  }
  if (!reached.empty()) lo = *std::min_element(reached.begin(), reached.end());
  std::optional<double> eta;
  if (m.state == "running") eta = launch::EstimateSecondsLeft(reached, m.rounds, m.elapsed);
  return {{"name", m.name},
          {"state", m.state},
          {"source", m.source},
          {"rounds", m.rounds},
          {"reached_min", lo},
          {"reached_mean", reached.empty() ? 0.0 : double(sum) / reached.size()},
          {"elapsed_s", Number(m.elapsed)},
          {"eta_s", eta ? Number(*eta) : json(nullptr)},
          {"observations", m.observations},
          {"curve", CurveJson(m.nodes, p)}};
}

// The N x N matrix `values` (node index order) as rows, both axes in `order`; null where NaN.
json OrderedMatrixJson(const std::vector<double>& values, const std::vector<size_t>& order) {
  size_t n = order.size();
  json matrix = json::array();
  for (size_t i : order) {
    json row = json::array();
    for (size_t j : order) row.push_back(Number(values[i * n + j]));
    matrix.push_back(std::move(row));
  }
  return matrix;
}

// The node table of method m, one row per node in `order`.
json NodeTableJson(const MethodView& m, const launch::Partition& p,
                   const std::vector<size_t>& order) {
  json table = json::array();
  for (size_t i : order) {
    const NodeView& v = m.nodes[i];
    table.push_back({{"id", p.ids[i]},
                     {"cluster", p.clusters[i]},
                     {"round", v.round},
                     {"val_loss", Number(v.val_loss)},
                     {"peers_alive", v.peers_alive ? json(*v.peers_alive) : json(nullptr)},
                     {"peers_known", v.peers_known},
                     {"bytes_in", v.bytes_in},
                     {"bytes_out", v.bytes_out},
                     {"failures", v.failures},
                     {"answering", m.source == "files" || v.answering},
                     {"http_port", v.http_port ? json(v.http_port) : json(nullptr)}});
  }
  return table;
}

// The EMD matrix and the clusters found from it, nodes in `order`; null when there is none.
json EmdJson(const std::optional<launch::EmdMatrix>& emd, const std::vector<size_t>& order) {
  if (!emd) return nullptr;
  json found = json::array();
  for (size_t i : order) found.push_back(emd->found[i]);
  return {{"matrix", OrderedMatrixJson(emd->matrix.values, order)},
          {"found", found},
          {"ari", Number(emd->ari)}};
}

// The clusters the policy found (cluster.csv); null when there are none.
json PolicyJson(const std::optional<launch::PolicyClusters>& policy) {
  if (!policy) return nullptr;
  return {{"ari", Number(policy->ari)},
          {"mean_round", Number(policy->mean_round)},
          {"clustered_nodes", policy->clustered_nodes}};
}

}  // namespace

struct DashboardModel::Method : MethodView {};

DashboardModel::DashboardModel(RunInfo info) : info_(std::move(info)) {
  const launch::Partition& p = info_.partition;
  for (size_t i = 0; i < p.ids.size(); ++i) index_[p.ids[i]] = i;
  order_.resize(p.ids.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
    if (p.clusters[a] != p.clusters[b]) return p.clusters[a] < p.clusters[b];
    return plot::NaturalLess(p.ids[a], p.ids[b]);
  });
  size_t n = p.ids.size();
  for (const std::string& name : info_.methods) {
    auto m = std::make_unique<Method>();
    m->name = name;
    m->nodes.resize(n);
    m->heat.assign(n * n, NAN);
    methods_.push_back(std::move(m));
  }
}

DashboardModel::~DashboardModel() = default;

DashboardModel::Method* DashboardModel::Find(const std::string& name) const {
  for (const auto& m : methods_) {
    if (m->name == name) return m.get();
  }
  return nullptr;
}

DashboardModel::Method* DashboardModel::FindOrAdd(const std::string& name) {
  if (Method* m = Find(name)) return m;
  methods_.push_back(std::make_unique<Method>());
  methods_.back()->name = name;
  return methods_.back().get();
}

void DashboardModel::MethodStarted(const launch::MethodRun& run) {
  std::lock_guard<std::mutex> lock(mutex_);
  Method* m = FindOrAdd(run.method.name);
  size_t n = info_.partition.ids.size();
  m->dir = run.dir;
  m->state = "running";
  m->source = "status";
  m->rounds = 0;
  m->elapsed = 0;
  m->nodes.assign(n, NodeView{});
  m->heat.assign(n * n, NAN);
  for (size_t i = 0; i < n && i < run.nodes.size(); ++i) {
    m->nodes[i].http_port = run.nodes[i].http_port;
  }
}

void DashboardModel::Observe(const std::string& name,
                             const std::vector<std::optional<node::NodeStatus>>& statuses,
                             double elapsed) {
  // Rounds files are read outside the lock: which ones is decided under it.
  std::vector<size_t> stale;
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Method* m = Find(name);
    if (!m || m->state != "running") return;
    ++observations_;
    ++m->observations;
    m->elapsed = elapsed;
    dir = m->dir;
    size_t n = info_.partition.ids.size();
    for (size_t i = 0; i < n && i < statuses.size(); ++i) {
      NodeView& v = m->nodes[i];
      v.answering = statuses[i].has_value();
      if (!statuses[i]) continue;
      const node::NodeStatus& s = *statuses[i];
      m->rounds = std::max(m->rounds, s.rounds);
      v.round = s.round;
      v.val_loss = s.val_loss;
      v.peers_known = static_cast<int>(s.peers.size());
      v.peers_alive = static_cast<int>(std::count_if(
          s.peers.begin(), s.peers.end(),
          [](const node::PeerStatus& p) { return p.liveness == topology::Liveness::kAlive; }));
      v.bytes_in = s.transport.bytes_in;
      v.bytes_out = s.transport.bytes_out;
      v.failures = s.counters.missed_deadlines;
      std::vector<float> probabilities = Unknown(n), scores = Unknown(n);
      for (size_t j = 0; j < n; ++j) {
        if (j != i) m->heat[i * n + j] = 0;
      }
      for (const node::PeerStatus& p : s.peers) {
        auto j = index_.find(p.id);
        if (j == index_.end()) continue;
        m->heat[i * n + j->second] = static_cast<double>(p.times_sampled);
        probabilities[j->second] = static_cast<float>(p.probability);
        if (p.score) scores[j->second] = static_cast<float>(*p.score);
      }
      if (s.round >= 0 && (v.history_rounds.empty() || s.round > v.history_rounds.back())) {
        v.history_rounds.push_back(s.round);
        v.probabilities.push_back(std::move(probabilities));
        v.scores.push_back(std::move(scores));
      }
      if (s.round > v.rows_read) stale.push_back(i);
    }
  }
  for (size_t i : stale) {
    auto rows = node::ReadRoundsCsv(
        launch::PathIn(launch::NodeDir(dir, info_.partition.ids[i]), launch::kRoundsFile));
    if (!rows.ok()) continue;  // not written yet
    std::lock_guard<std::mutex> lock(mutex_);
    Method* m = Find(name);
    if (!m || m->state != "running") return;
    NodeView& v = m->nodes[i];
    for (const node::RoundRow& r : *rows) {
      v.metric[r.round] = launch::Metric(r, info_.partition.classification);
      v.rows_read = std::max(v.rows_read, r.round);
    }
  }
}

Status DashboardModel::ShowFinished(const launch::MethodRun& run) {
  const launch::Partition& p = info_.partition;
  size_t n = p.ids.size();
  FirstError errors;
  std::vector<NodeView> nodes(n);
  int64_t last_round = -1;
  for (size_t i = 0; i < n && i < run.nodes.size(); ++i) {
    nodes[i] = FinishedNode(run.nodes[i], p.classification, errors);
    last_round = std::max(last_round, nodes[i].round);
  }
  std::vector<double> heat = FinishedHeat(run.dir, p, errors);
  auto emd = launch::ReadEmdMatrix(run, p);
  errors.Note(emd.status());
  auto policy = launch::ReadPolicyClusters(run, p);
  errors.Note(policy.status());

  std::lock_guard<std::mutex> lock(mutex_);
  Method* m = FindOrAdd(run.method.name);
  for (size_t i = 0; i < n; ++i) {
    if (i < m->nodes.size()) KeepLiveHistory(m->nodes[i], nodes[i]);
    if (i < run.nodes.size()) {
      AppendFinalScores(nodes[i], launch::PathIn(run.nodes[i].dir, launch::kScoresFile), index_, n,
                        errors);
    }
  }
  m->dir = run.dir;
  m->nodes = std::move(nodes);
  m->heat = std::move(heat);
  m->emd = emd.ok() ? std::move(*emd) : std::nullopt;
  m->policy = policy.ok() ? *policy : std::nullopt;
  // The status the report gives the method (complete, interrupted or failed).
  m->state = launch::Summarize(run, p).status;
  m->source = "files";
  m->elapsed = run.wall_seconds;
  if (p.classification) m->over_time = launch::AccuracyOverTime(launch::HonestNodeRounds(run));
  if (m->rounds == 0) m->rounds = std::max<int64_t>(last_round, 0);
  return errors.status;
}

const DashboardModel::Method* DashboardModel::Shown(const std::string& method) const {
  const Method* shown = nullptr;
  for (const auto& m : methods_) {
    if (m->name == method) shown = m.get();
  }
  if (shown) return shown;
  for (const auto& m : methods_) {
    if (m->state == "running") shown = m.get();
  }
  for (auto it = methods_.rbegin(); !shown && it != methods_.rend(); ++it) {
    if ((*it)->state != "pending") shown = it->get();
  }
  return shown;
}

std::string DashboardModel::StateJson(const std::string& method) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const launch::Partition& p = info_.partition;
  json ids = json::array(), clusters = json::array();
  for (size_t i : order_) {
    ids.push_back(p.ids[i]);
    clusters.push_back(p.clusters[i]);
  }
  // Time to target: the run's target over the methods that have ended (summary.csv's once all
  // have).
  std::vector<std::vector<launch::TimedAccuracy>> curves;
  for (const auto& m : methods_) curves.push_back(m->over_time);
  const std::optional<double> target = launch::RunTarget(curves, launch::kRunTargetPoints);
  json methods = json::array();
  for (const auto& m : methods_) {
    methods.push_back(MethodSummaryJson(*m, p));
    std::optional<double> seconds;
    if (target) seconds = launch::TimeToTarget(m->over_time, *target);
    methods.back()["time_to_target_s"] = seconds ? Number(*seconds) : json(nullptr);
  }
  const Method* selected = Shown(method);
  json document = {{"scenario", info_.scenario},
                   {"mode", info_.mode},
                   {"out_dir", info_.out_dir},
                   {"metric", p.classification ? "test accuracy (%)" : "test MSE"},
                   {"nodes", ids},
                   {"clusters", clusters},
                   {"num_clusters", p.num_clusters},
                   {"observations", observations_},
                   {"target_acc", target ? Number(*target) : json(nullptr)},
                   {"methods", methods},
                   {"method", selected ? json(selected->name) : json(nullptr)}};
  if (selected) {
    document["heatmap"] = OrderedMatrixJson(selected->heat, order_);
    document["table"] = NodeTableJson(*selected, p, order_);
    document["emd"] = EmdJson(selected->emd, order_);
    document["policy"] = PolicyJson(selected->policy);
  }
  return document.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<std::string> DashboardModel::NodeJson(const std::string& method,
                                             const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const Method* m = Find(method);
  if (!m) return Status::NotFound("no method '" + method + "' in this run");
  auto it = index_.find(id);
  if (it == index_.end()) return Status::NotFound("no node '" + id + "' in this run");
  const NodeView& v = m->nodes[it->second];
  json peers = json::array(), probabilities = json::array(), scores = json::array();
  for (size_t j : order_) peers.push_back(info_.partition.ids[j]);
  for (size_t r = 0; r < v.history_rounds.size(); ++r) {
    json p = json::array(), s = json::array();
    for (size_t j : order_) {
      p.push_back(Number(v.probabilities[r][j]));
      s.push_back(Number(v.scores[r][j]));
    }
    probabilities.push_back(std::move(p));
    scores.push_back(std::move(s));
  }
  json document = {{"method", m->name},
                   {"id", id},
                   {"cluster", info_.partition.clusters[it->second]},
                   {"peers", peers},
                   {"rounds", v.history_rounds},
                   {"probabilities", probabilities},
                   {"scores", scores},
                   {"http_port", v.http_port ? json(v.http_port) : json(nullptr)}};
  return document.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace meshlearn::dashboard
