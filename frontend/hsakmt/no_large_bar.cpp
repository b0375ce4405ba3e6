// HIP's runtime (ROCclr) takes a GPU whose VRAM pool the CPU may be given access to as a
// large-BAR GPU, and ROCr 5.2 says that of every coarse-grained VRAM pool; ROCclr then
// copies up to 8 KiB to GPU memory, and 64 bytes from it, with a CPU memcpy. A guest CPU
// never reaches GPU memory through Xen (the VRAM heap is FB_PRIVATE, HostAccess refused),
// so the library tells ROCclr so, as the environment variable ROCclr reads for it, before
// any program code runs: ROC_ENABLE_LARGE_BAR=0 unless the user set it.
#include <cstdlib>

namespace {

__attribute__((constructor)) void no_large_bar() { ::setenv("ROC_ENABLE_LARGE_BAR", "0", 0); }

}  // namespace
