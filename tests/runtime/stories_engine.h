// The bundled stories260K, loaded once per test program (the runtime tests' small real model).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "tova/engine.h"

namespace tova::testing {

inline const Engine& stories() {
  static const std::unique_ptr<Engine> e = [] {
    auto r = Engine::load({.model_path = "", .n_threads = 1});
    EXPECT_TRUE(r.ok()) << r.message();
    return std::move(*r);
  }();
  return *e;
}

}  // namespace tova::testing
