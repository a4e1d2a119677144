// Linux epoll and eventfd for Swift (Glibc's module map leaves <sys/epoll.h> and
// <sys/eventfd.h> out): the event loop (Sources/Sockets/EventLoop.swift). Part of the C
// library, nothing to link.
#ifndef ANCS_CEPOLL_SHIM_H
#define ANCS_CEPOLL_SHIM_H

#include <sys/epoll.h>
#include <sys/eventfd.h>

#endif
