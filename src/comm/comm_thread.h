// One worker thread that runs submitted tasks in FIFO order. Used to make
// multi-step (hierarchical) collectives non-blocking: because every rank
// submits in the same order and the worker runs them in that order, the
// underlying collectives are issued in the same order everywhere.
// submit() may be called from any thread; the destructor drains the queue.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "tierzero/communicator.h"

namespace tierzero {

class CommThread {
 public:
  CommThread();
  ~CommThread();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;
  // Queues `task`; the Request completes when it has run (rethrowing its exception on wait()).
  Request submit(std::function<void()> task);

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace tierzero
