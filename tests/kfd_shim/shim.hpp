// The shim's state in the process it is preloaded into: which fds are the emulated
// /dev/kfd and render node (/dev/null underneath, so that close, dup and poll just work),
// the fake sysfs files and directories, and the KFD process, made with the first open of
// /dev/kfd. interpose.cpp routes the C library's entry points here.
#ifndef XENHSA_TESTS_KFD_SHIM_SHIM_HPP
#define XENHSA_TESTS_KFD_SHIM_SHIM_HPP

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "kfd_process.hpp"

namespace xenhsa::kfd_shim {

enum class Node : uint8_t { none, kfd, render };

class Shim {
public:
    static Shim& get();
    // The process's KfdProcess, or nullptr before the first /dev/kfd open.
    static KfdProcess* process_if_open() noexcept;

    // The emulated node a path names (/dev/kfd, /dev/dri/renderD128), or none.
    static Node node_at(const char* path) noexcept;
    Node node_of(int fd);
    // An fd for a node's path (errno on failure).
    int open_node(Node node, int flags);
    void forget(int fd);
    void duplicated(int from, int to);
    void fill_stat(Node node, struct stat* st) const;

    // The fake sysfs: a file's contents or a directory's entries (nullptr: not ours).
    static const std::string* file(const char* path);
    static bool is_dir(const char* path);
    // opendir/readdir/closedir of a fake directory.
    DIR* open_dir(const char* path);
    bool read_dir(DIR* dir, struct dirent*& entry);  // false: not one of ours
    bool close_dir(DIR* dir);

    int ioctl(Node node, unsigned long request, void* arg);
    void* mmap(Node node, void* addr, size_t length, int prot, int flags, uint64_t offset);

private:
    Shim();
    struct FakeDir;

    ShimOptions options_;
    std::mutex mutex_;
    std::unordered_map<int, Node> fds_;
    std::unordered_set<FakeDir*> dirs_;
    std::unique_ptr<KfdProcess> process_;
};

}  // namespace xenhsa::kfd_shim

#endif
