// The Swift concurrency runtime's hook for its global executor, which the event loop
// (Sources/Links/EventLoop.swift) takes over. The variable is defined and exported by
// libswift_Concurrency (every Swift program links it); its declaration is the runtime's
// include/swift/Runtime/ConcurrencyHooks.def: a hook called with each job that would go to
// the default global executor, and that executor's own enqueue. Both use the Swift calling
// convention. Nothing to link.
#ifndef ANCS_CSWIFTRUNTIME_SHIM_H
#define ANCS_CSWIFTRUNTIME_SHIM_H

typedef void (*ancs_global_enqueue_original)(void *job) __attribute__((swiftcall));
typedef void (*ancs_global_enqueue_hook)(void *job, ancs_global_enqueue_original original)
    __attribute__((swiftcall));

extern ancs_global_enqueue_hook swift_task_enqueueGlobal_hook;

/// Sets the hook (a function, not a variable Swift would have to reach as shared state).
static inline void ancs_set_global_enqueue_hook(ancs_global_enqueue_hook hook) {
  swift_task_enqueueGlobal_hook = hook;
}

#endif
