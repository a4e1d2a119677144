// Linux epoll for Swift (Glibc's module map leaves <sys/epoll.h> out): the socket links'
// reactor (Sources/Links/SocketReactor.swift). Part of the C library, nothing to link.
#ifndef ANCS_CEPOLL_SHIM_H
#define ANCS_CEPOLL_SHIM_H

#include <sys/epoll.h>

#endif
