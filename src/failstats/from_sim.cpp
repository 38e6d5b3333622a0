// SPDX-License-Identifier: Apache-2.0
// Replaying the simulator's failure stream into statistics.
#include "failstats/from_sim.h"

#include "core/format.h"

namespace cardiac::failstats {

FailureStats stats_from_simulation(const sim::FailureModel& model, const sim::Topology& topology,
                                   std::uint64_t seed, TimeNs horizon) {
  auto node_name = [](std::uint32_t n) { return fmt::format("node{:04d}", n); };
  std::vector<NodeExposure> nodes;
  const double days = static_cast<double>(horizon) / 86400e9;
  for (std::uint32_t n = 0; n < topology.nodes; ++n) {
    nodes.push_back({node_name(n), topology.gpus_per_node, days * topology.gpus_per_node});
  }
  std::vector<FaultClass> classes;
  for (const sim::Component& c : model.components) classes.push_back(classify_component(c));
  std::vector<IncidentRecord> incidents;
  sim::FailureProcess process(model, topology, seed, horizon);
  while (auto ev = process.next()) {
    IncidentRecord r;
    r.fault_class = classes[ev->component];
    r.start = ev->time;
    r.end = ev->time + ev->repair;
    r.node = node_name(ev->node);
    if (ev->gpu >= 0) r.gpu = fmt::format("{}/gpu{}", r.node, ev->gpu);
    incidents.push_back(std::move(r));
  }
  // Every name is in the exposure, so tabulate cannot refuse.
  auto s = tabulate(incidents, nodes, 0, horizon);
  FailureStats out = s ? std::move(*s) : FailureStats{};
  out.sources.push_back(fmt::format("sim: {} on {}x{}, seed {}, {:g} days", model.name,
                                    topology.nodes, topology.gpus_per_node, seed, days));
  return out;
}

}  // namespace cardiac::failstats
