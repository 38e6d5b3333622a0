// SPDX-License-Identifier: Apache-2.0
// memfd-backed progress page.
#include "telemetry/worker_progress.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace cardiac::telemetry {

WorkerProgress::~WorkerProgress() {
  if (page_) munmap(page_, sizeof(Page));
  if (fd_ >= 0) close(fd_);
}

Result<std::unique_ptr<WorkerProgress>> WorkerProgress::create() {
  // Not CLOEXEC-free: posix_spawn's dup2 onto the child's fd number clears the flag there.
  int fd = memfd_create("cardiac-nvml-progress", MFD_CLOEXEC);
  if (fd < 0) return fail(Error::io("memfd_create", errno));
  if (ftruncate(fd, sizeof(Page)) != 0) {
    int saved = errno;
    close(fd);
    return fail(Error::io("ftruncate(memfd)", saved));
  }
  auto p = attach(fd);
  if (!p) close(fd);
  return p;
}

Result<std::unique_ptr<WorkerProgress>> WorkerProgress::attach(int fd) {
  void* addr = mmap(nullptr, sizeof(Page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return fail(Error::io("mmap(progress)", errno));
  auto p = std::make_unique<WorkerProgress>();
  p->fd_ = fd;
  p->page_ = static_cast<Page*>(addr);
  return p;
}

void WorkerProgress::publish(int device, std::string_view function) {
  if (!page_) return;
  std::uint64_t s = page_->seq.load(std::memory_order_relaxed);
  page_->seq.store(s + 1, std::memory_order_release);  // odd: being written
  std::atomic_thread_fence(std::memory_order_release);
  page_->device = device;
  size_t n = std::min(function.size(), sizeof(page_->function) - 1);
  std::memcpy(page_->function, function.data(), n);
  page_->function[n] = '\0';
  std::atomic_thread_fence(std::memory_order_release);
  page_->seq.store(s + 2, std::memory_order_release);
}

std::optional<InFlightCall> WorkerProgress::read() const {
  if (!page_) return std::nullopt;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::uint64_t before = page_->seq.load(std::memory_order_acquire);
    if (before == 0) return std::nullopt;
    if (before & 1) continue;
    InFlightCall call;
    call.device = page_->device;
    char buf[sizeof(page_->function)];
    std::memcpy(buf, page_->function, sizeof(buf));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (page_->seq.load(std::memory_order_acquire) != before) continue;
    buf[sizeof(buf) - 1] = '\0';
    call.function = buf;
    return call;
  }
  return std::nullopt;
}

void WorkerProgress::clear() {
  if (page_) page_->seq.store(0, std::memory_order_release);
}

}  // namespace cardiac::telemetry
