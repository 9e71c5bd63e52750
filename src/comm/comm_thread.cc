#include "comm/comm_thread.h"

#include <future>

namespace tierzero {

namespace {
class FutureRequest final : public Request::Impl {
 public:
  explicit FutureRequest(std::future<void> f) : future_(std::move(f)) {}
  void wait() override {
    if (!done_) {
      done_ = true;
      future_.get();
    }
  }
  bool test() override {
    return done_ || future_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

 private:
  std::future<void> future_;
  bool done_ = false;
};
}  // namespace

CommThread::CommThread() : worker_([this] { run(); }) {}

CommThread::~CommThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  worker_.join();
}

Request CommThread::submit(std::function<void()> task) {
  auto promise = std::make_shared<std::promise<void>>();
  std::future<void> future = promise->get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back([promise, task = std::move(task)] {
      try {
        task();
        promise->set_value();
      } catch (...) {
        promise->set_exception(std::current_exception());
      }
    });
  }
  ready_.notify_one();
  return Request(std::make_unique<FutureRequest>(std::move(future)));
}

void CommThread::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace tierzero
