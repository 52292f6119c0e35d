// sim/node.hpp — a simulated process: fibers, volatile state, a local clock.
//
// A node runs a main function in a fiber (and any fibers it spawns). crash()
// makes every fiber of the node throw sim::Crash at its current or next await
// point: stacks unwind, RAII runs, and so everything the fibers held (the
// node's volatile state) is dropped. restart() runs the main function again in
// a new fiber. pause_for(d) freezes the node while it stays alive: no fiber of
// a paused node returns from an await point until the pause ends (a GC pause).
// The local clock is virtual time plus a fixed skew, as a wall clock would be.
//
// Durable state (a store, a broker log) belongs to other objects that outlive
// the crash; messages already in the network are still delivered elsewhere.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/simulation.hpp"

namespace sim {

class Node {
 public:
  Node(Simulation& simulation, NodeId id, std::string name, GroupId group)
      : simulation_(simulation), id_(id), name_(std::move(name)), group_(group) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  NodeId id() const { return id_; }
  const std::string& name() const { return name_; }
  GroupId group() const { return group_; }
  Simulation& simulation() { return simulation_; }

  // The node's main function, run by start() and by every restart().
  void set_main(std::function<void()> main) { main_ = std::move(main); }
  // Starts the main function in a new fiber. REQUIRES: a main function is set.
  void start();
  // Runs `body` in a new fiber owned by this node (it dies with the node).
  void spawn(std::function<void()> body);

  // Crash: every fiber of the node throws sim::Crash at its next await point.
  // Idempotent while down. Messages to a down node are dropped.
  void crash();
  // Restart after a crash: alive again, main function in a new fiber.
  void restart();
  bool alive() const { return alive_; }
  std::uint32_t incarnation() const { return incarnation_; }
  std::uint32_t crashes() const { return crashes_; }

  // Freeze the node for `duration` (extends a pause in progress).
  void pause_for(Duration duration);
  bool paused() const { return paused_until_ > simulation_.now(); }
  Time paused_until() const { return paused_until_; }

  // Local clock: virtual time + skew (+ drift not modelled). Code under test
  // reads time only through this, as real code reads a wall clock.
  Time local_now() const { return simulation_.now() + clock_skew_; }
  void set_clock_skew(Duration skew) { clock_skew_ = skew; }
  Duration clock_skew() const { return clock_skew_; }

  std::size_t fiber_count() const { return fiber_slots_.size(); }

 private:
  friend class Simulation;
  Simulation& simulation_;
  NodeId id_;
  std::string name_;
  GroupId group_;
  std::function<void()> main_;
  std::vector<std::uint32_t> fiber_slots_;  // live fibers of this node, in spawn order
  bool alive_ = true;
  std::uint32_t incarnation_ = 0;
  std::uint32_t crashes_ = 0;
  Time paused_until_ = 0;
  Duration clock_skew_ = 0;
};

// The node of the calling fiber.
inline Node& this_node() { return Simulation::current().this_node(); }

}  // namespace sim
