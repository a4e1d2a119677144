// The Swift concurrency runtime's hook for its global executor, which the event loop
// (Sources/Sockets/EventLoop.swift) takes over. The variable is defined and exported by
// libswift_Concurrency (every Swift program links it); its declaration is the runtime's
// include/swift/Runtime/ConcurrencyHooks.def: a hook called with each job that would go to
// the default global executor, and that executor's own enqueue. Both use the Swift calling
// convention. Nothing to link.
#ifndef ANCS_CSWIFTRUNTIME_SHIM_H
#define ANCS_CSWIFTRUNTIME_SHIM_H

#include <stdbool.h>

typedef void (*ancs_global_enqueue_original)(void *job) __attribute__((swiftcall));
typedef void (*ancs_global_enqueue_hook)(void *job, ancs_global_enqueue_original original)
    __attribute__((swiftcall));

extern ancs_global_enqueue_hook swift_task_enqueueGlobal_hook;

/// Puts `hook` in `slot` unless another hook is there, in one compare-and-swap: true when
/// `hook` is the one in `slot` now (set here or before), false when another one is.
static inline bool ancs_install_hook(ancs_global_enqueue_hook *slot, ancs_global_enqueue_hook hook) {
  ancs_global_enqueue_hook expected = 0;
  if (__atomic_compare_exchange_n(slot, &expected, hook, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    return true;
  }
  return expected == hook;
}

/// The runtime's own slot, for `ancs_install_hook`.
static inline ancs_global_enqueue_hook *ancs_global_enqueue_hook_slot(void) {
  return &swift_task_enqueueGlobal_hook;
}

#endif
