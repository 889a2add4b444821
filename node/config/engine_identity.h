#pragma once
// Engine identity: which node of the mesh this process is, taken from the engine that started it
// (DESIGN.md "Scale: engines"). No I/O: the environment, the host name and the hostfile's text
// are passed in, so every rule is unit-tested without an engine.
//
// Specification.
// - Kinds and what each reads:
//   - slurm: rank SLURM_PROCID, size SLURM_NTASKS, this host SLURMD_NODENAME (else the host
//     name), rank 0's host the first host of SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST), in
//     Slurm's compressed hostlist syntax ("node[1-3,5],gpu07").
//     Rationale: srun starts task 0 on the first node of its step, for block and cyclic
//     distributions alike; inside an sbatch allocation a step may use fewer nodes than the job.
//   - mpi (Open MPI): rank OMPI_COMM_WORLD_RANK, size OMPI_COMM_WORLD_SIZE, this host the host
//     name, rank 0's host the first host of the hostfile (mpirun maps rank 0 there).
//   - kubernetes (a StatefulSet behind a headless Service): the pod's host name is
//     "<name>-<ordinal>" and the ordinal is the rank; the size is the settings' `size` (the
//     StatefulSet's replicas); this host is "<host name>.<service>" and rank 0's is
//     "<name>-0.<service>".
//   - env (any other launcher: compose, a shell loop, a scheduler of your own): rank
//     MESHLEARN_RANK, size MESHLEARN_SIZE, rank 0's host MESHLEARN_RANK0_HOST, this host
//     MESHLEARN_HOST (else the host name).
//   - auto: Open MPI when OMPI_COMM_WORLD_RANK is set, else Slurm when SLURM_PROCID is set, else
//     env when MESHLEARN_RANK is set, else Kubernetes when KUBERNETES_SERVICE_HOST is set.
//     Rationale: mpirun inside a Slurm allocation inherits the allocation's SLURM_* variables,
//     so the variables of the launcher that started this very process win.
// - Ports: rank r listens on `port` + r under slurm, mpi and env (ranks share hosts; on one host
// every
//   rank needs its own port), and on `port` under kubernetes (every pod has its own address).
// - A process without a usable identity gets kInvalidArgument naming the variable looked for and
//   what it held; a rank outside [0, size) is refused.
// - Placeholders in a template's strings: {rank}, {size}, {host} (the advertised host) and
//   {port}; any other {word} is refused with the list of placeholders.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"

namespace meshlearn::node {

// The engine that started the process.
enum class EngineKind {
  kAuto,        // "auto": whichever engine's variables are present
  kSlurm,       // "slurm": srun / sbatch
  kMpi,         // "mpi": Open MPI's mpirun
  kKubernetes,  // "kubernetes": a StatefulSet pod
  kEnv,         // "env": MESHLEARN_RANK, MESHLEARN_SIZE, MESHLEARN_RANK0_HOST
};

// The config names of the engine kinds, in documentation order.
NameTable<EngineKind> EngineKindNames();

// The [engine] section of a node config template.
struct EngineSettings {
  EngineKind kind = EngineKind::kAuto;
  uint16_t port = 47000;  // rank 0's port; see the specification for the others
  std::string hostfile;   // mpi: the hostfile mpirun was given (its first host runs rank 0)
  std::string service;    // kubernetes: the headless Service's name
  int size = 0;           // kubernetes: the number of pods (the StatefulSet's replicas)
  bool operator==(const EngineSettings&) const = default;
};

// What the process can see of its engine.
struct EngineEnvironment {
  std::map<std::string, std::string> variables;  // the process environment
  std::string host_name;                         // gethostname()
  std::optional<std::string> hostfile_text;      // the hostfile's contents, when it was read
};

// Who this process is in the mesh.
struct EngineIdentity {
  EngineKind kind = EngineKind::kAuto;  // the engine found (never kAuto)
  int rank = 0;
  int size = 0;
  std::string host;        // the host name this rank advertises to its peers
  uint16_t port = 0;       // this rank's port ({port})
  std::string rank0_host;  // where rank 0 runs
  uint16_t rank0_port = 0;
};

// Finds this process's identity from `env` under `settings` (see the specification).
Result<EngineIdentity> ResolveEngineIdentity(const EngineSettings& settings,
                                             const EngineEnvironment& env);

// Expands a Slurm hostlist ("node[1-3,5],gpu[01-02]x") into host names, in order. Zero-padded
// ranges keep their width. kInvalidArgument for an unbalanced bracket, a bad range or an empty
// list; more than `max_hosts` hosts is refused too.
Result<std::vector<std::string>> ExpandSlurmHostlist(std::string_view hostlist,
                                                     size_t max_hosts = 1000000);

// The first host of an Open MPI hostfile ("host slots=N" lines, '#' comments). kInvalidArgument
// when it names no host.
Result<std::string> FirstHostOfHostfile(std::string_view text);

// `text` with every placeholder filled from `identity`. kInvalidArgument naming an unknown
// placeholder.
Result<std::string> FillPlaceholders(std::string_view text, const EngineIdentity& identity);

// True when `text` holds a placeholder ("{word}").
bool HasPlaceholder(std::string_view text);

}  // namespace meshlearn::node
