// Linux kernel interfaces that Swift's Glibc module does not export: epoll (the server's event
// loop), inotify (waking on another process's commit) and eventfd. Part of libc: nothing to link.
#ifdef __linux__
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/eventfd.h>
#endif
