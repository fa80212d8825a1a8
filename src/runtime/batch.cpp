// tova::Batch: the public face of the batch scheduler (runtime::BatchScheduler).
#include "tova/batch.h"

#include "runtime/batch_scheduler.h"

namespace tova {

Batch::Batch(const Engine& engine, const BatchOptions& o)
    : scheduler_(std::make_unique<runtime::BatchScheduler>(engine, o)) {}

Batch::~Batch() = default;

Result<BatchStep> Batch::step(std::span<Session* const> sessions) {
  return scheduler_->step(sessions);
}

Status Batch::drain(std::span<Session* const> sessions) { return scheduler_->drain(sessions); }

}  // namespace tova
