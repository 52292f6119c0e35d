// Fixture for the tidy self-test: every line below must be flagged by scripts/tidy.
#include <chrono>
#include <random>
#include <thread>
#include <unordered_map>
void violations() {
  auto t = std::chrono::steady_clock::now();
  int r = std::rand();
  std::random_device device;
  std::uniform_int_distribution<int> d(1, 6);
  boost::this_fiber::sleep_for(std::chrono::milliseconds(1));
  std::thread worker([] {});
  std::unordered_map<int, int> table;
  for (auto& entry : table) {}
}
