// xenhsa-hip-check: a HIP program as a user writes it, against Debian's HIP runtime
// (libamdhip64, hip_runtime_api.h) and nothing of xenhsa's. Run it under xenhsa-run.
// Only the runtime's own work: no kernel of the program's (a software GPU runs no GPU
// code), and no copy that ROCclr does with a kernel of its own (device to device,
// hipMemset: docs/guest-rocm.md, "HIP").
//
//   device        hipGetDeviceCount, hipGetDeviceProperties: one GPU, its name and ISA
//   pageable      hipMalloc, hipMemcpy to and from the program's own memory (a vector, at
//                 an address off any page boundary), byte for byte, hipFree
//   registered    hipHostRegister of part of a buffer: the GPU's address differs from the
//                 CPU's (as a userptr's on a GPU); a copy into it, CPU writes seen by a copy
//                 out of it; after hipHostUnregister the bytes are the program's again, and
//                 the bytes around the range on the same pages never changed
//   pinned        hipHostMalloc'd memory copied to the GPU and back, hipHostFree
//   shared        hipHostRegister of a MAP_SHARED mapping fails, its bytes unchanged
//
// xenhsa-hip-check --needs-gpu-code d2d|memset
//                 a device-to-device hipMemcpy or a hipMemset, which run HIP's own GPU
//                 code: expected to abort (SIGABRT) with HIP's message
//
// Output: "check <name> ok|FAIL ...", "info ...", last "summary hip-check ... result=ok".
#include <hip/hip_runtime_api.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

unsigned checks = 0;
unsigned failures = 0;

void check(const char* name, bool ok, const std::string& detail = {}) {
    ++checks;
    failures += ok ? 0 : 1;
    std::printf("check %s %s%s%s\n", name, ok ? "ok" : "FAIL", detail.empty() ? "" : " ",
                detail.c_str());
    std::fflush(stdout);
}

bool hip_ok(const char* what, hipError_t e) {
    if (e == hipSuccess) {
        return true;
    }
    check(what, false, std::string(what) + ": " + hipGetErrorString(e));
    return false;
}

unsigned char pattern(std::size_t i, unsigned seed) {
    return static_cast<unsigned char>(i * 131 + seed);
}

std::size_t first_difference(const unsigned char* a, const unsigned char* b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        if (a[i] != b[i]) {
            return i;
        }
    }
    return n;
}

std::string at(std::size_t i, std::size_t n) {
    return i == n ? "" : "first difference at byte " + std::to_string(i);
}

void device() {
    int count = 0;
    if (!hip_ok("hipGetDeviceCount", hipGetDeviceCount(&count))) {
        return;
    }
    hipDeviceProp_t props{};
    if (!hip_ok("hipGetDeviceProperties", hipGetDeviceProperties(&props, 0))) {
        return;
    }
    std::printf("info device count=%d name=\"%s\" arch=%s memory=%zu cus=%d\n", count, props.name,
                props.gcnArchName, props.totalGlobalMem, props.multiProcessorCount);
    check("device", count == 1 && std::strncmp(props.gcnArchName, "gfx", 3) == 0 &&
                        props.totalGlobalMem > 0 && props.multiProcessorCount > 0);
}

void pageable(std::size_t n) {
    void* gpu = nullptr;
    if (!hip_ok("hipMalloc", hipMalloc(&gpu, n))) {
        return;
    }
    std::vector<unsigned char> in(n + 3);
    std::vector<unsigned char> out(n + 5, 0);
    for (std::size_t i = 0; i < in.size(); ++i) {
        in[i] = pattern(i, 7);
    }
    if (hip_ok("hipMemcpy-to-gpu", hipMemcpy(gpu, in.data() + 3, n, hipMemcpyHostToDevice)) &&
        hip_ok("hipMemcpy-from-gpu", hipMemcpy(out.data() + 5, gpu, n, hipMemcpyDeviceToHost))) {
        const std::size_t d = first_difference(in.data() + 3, out.data() + 5, n);
        check("pageable-round-trip", d == n, at(d, n));
    }
    hip_ok("hipFree", hipFree(gpu));
}

void registered(std::size_t n) {
    void* gpu = nullptr;
    if (!hip_ok("hipMalloc", hipMalloc(&gpu, n))) {
        return;
    }
    std::vector<unsigned char> source(n);
    for (std::size_t i = 0; i < n; ++i) {
        source[i] = pattern(i, 11);
    }
    // The registered range starts and ends inside pages whose other bytes are the
    // program's: they must keep their values whatever happens to the range.
    std::vector<unsigned char> buffer(n + 2 * 4096 + 200);
    for (std::size_t i = 0; i < buffer.size(); ++i) {
        buffer[i] = pattern(i, 3);
    }
    const std::vector<unsigned char> before = buffer;
    unsigned char* range = buffer.data() + 4096 + 100;
    if (hip_ok("hipMemcpy-to-gpu", hipMemcpy(gpu, source.data(), n, hipMemcpyHostToDevice)) &&
        hip_ok("hipHostRegister", hipHostRegister(range, n, hipHostRegisterDefault))) {
        void* gpu_view = nullptr;
        hip_ok("hipHostGetDevicePointer", hipHostGetDevicePointer(&gpu_view, range, 0));
        std::printf("info registered cpu=%p gpu=%p\n", static_cast<void*>(range), gpu_view);
        check("registered-gpu-address", gpu_view != nullptr);
        if (hip_ok("hipMemcpy-into-registered", hipMemcpy(range, gpu, n, hipMemcpyDeviceToHost))) {
            const std::size_t d = first_difference(range, source.data(), n);
            check("registered-copy-in", d == n, at(d, n));
        }
        // The CPU writes the range; a copy out of it must see the writes.
        for (std::size_t i = 0; i < n; ++i) {
            range[i] = pattern(i, 29);
        }
        std::vector<unsigned char> back(n, 0);
        if (hip_ok("hipMemcpy-out-of-registered",
                   hipMemcpy(gpu, range, n, hipMemcpyHostToDevice)) &&
            hip_ok("hipMemcpy-from-gpu", hipMemcpy(back.data(), gpu, n, hipMemcpyDeviceToHost))) {
            const std::size_t d = first_difference(back.data(), range, n);
            check("registered-cpu-writes-seen", d == n, at(d, n));
        }
        hip_ok("hipHostUnregister", hipHostUnregister(range));
        bool kept = true;
        for (std::size_t i = 0; i < n; ++i) {
            kept = kept && range[i] == pattern(i, 29);
        }
        check("unregistered-bytes-kept", kept);
        range[0] ^= 0xff;  // the program's own memory again, writable
        range[0] ^= 0xff;
        const std::size_t head = first_difference(buffer.data(), before.data(), 4096 + 100);
        const std::size_t tail_at = 4096 + 100 + n;
        const std::size_t tail_n = buffer.size() - tail_at;
        const std::size_t tail =
            first_difference(buffer.data() + tail_at, before.data() + tail_at, tail_n);
        const bool untouched = head == 4096 + 100 && tail == tail_n;
        check("neighbours-untouched", untouched,
              untouched ? "" : "head: " + at(head, 4096 + 100) + ", tail: " + at(tail, tail_n));
    }
    hip_ok("hipFree", hipFree(gpu));
}

void pinned(std::size_t n) {
    void* host = nullptr;
    void* gpu = nullptr;
    if (!hip_ok("hipHostMalloc", hipHostMalloc(&host, n, hipHostMallocDefault)) ||
        !hip_ok("hipMalloc", hipMalloc(&gpu, n))) {
        return;
    }
    auto* bytes = static_cast<unsigned char*>(host);
    for (std::size_t i = 0; i < n; ++i) {
        bytes[i] = pattern(i, 17);
    }
    std::vector<unsigned char> out(n, 0);
    if (hip_ok("hipMemcpy-to-gpu", hipMemcpy(gpu, host, n, hipMemcpyHostToDevice)) &&
        hip_ok("hipMemcpy-from-gpu", hipMemcpy(out.data(), gpu, n, hipMemcpyDeviceToHost))) {
        const std::size_t d = first_difference(out.data(), bytes, n);
        check("pinned-round-trip", d == n, at(d, n));
    }
    hip_ok("hipFree", hipFree(gpu));
    hip_ok("hipHostFree", hipHostFree(host));
}

// Memory shared with another mapping cannot move onto shared pages: registering it is
// refused with an error, and nothing else changes.
void shared_refused() {
    const std::size_t n = 2 * 4096;
    void* shared = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        check("shared-refused", false, "mmap failed");
        return;
    }
    std::memset(shared, 0x3c, n);
    const hipError_t e = hipHostRegister(shared, n, hipHostRegisterDefault);
    const auto* bytes = static_cast<const unsigned char*>(shared);
    check("shared-refused", e != hipSuccess && bytes[0] == 0x3c && bytes[n - 1] == 0x3c,
          std::string("hipHostRegister: ") + hipGetErrorString(e));
    if (e == hipSuccess) {
        (void)hipHostUnregister(shared);
    }
    munmap(shared, n);
}

// A copy that needs HIP's own GPU code (a device-to-device hipMemcpy, hipMemset): the
// software GPU cannot run it, so HIP is expected to abort the program; returning is a
// failed check, a wrong result all the more.
int needs_gpu_code(const std::string& what) {
    const std::size_t n = 1 << 16;
    void* a = nullptr;
    void* b = nullptr;
    if (!hip_ok("hipMalloc", hipMalloc(&a, n)) || !hip_ok("hipMalloc", hipMalloc(&b, n))) {
        return 1;
    }
    std::printf("info running %s\n", what.c_str());
    std::fflush(stdout);
    hipError_t e = hipSuccess;
    if (what == "d2d") {
        e = hipMemcpy(b, a, n, hipMemcpyDeviceToDevice);
    } else if (what == "memset") {
        e = hipMemset(a, 0x42, n);
    }
    if (e == hipSuccess) {
        e = hipDeviceSynchronize();
    }
    check("gpu-code-aborted", false, std::string("returned: ") + hipGetErrorString(e));
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::string(argv[1]) == "--needs-gpu-code") {
        return needs_gpu_code(argv[2]);
    }
    device();
    // Small copies take ROCclr's staging buffers, large ones pin the program's memory.
    for (const std::size_t n : {std::size_t{4096 + 17}, std::size_t{3} << 20}) {
        std::printf("info bytes=%zu\n", n);
        pageable(n);
        registered(n);
        pinned(n);
    }
    shared_refused();
    std::printf("summary hip-check checks=%u failed=%u result=%s\n", checks, failures,
                failures == 0 && checks > 0 ? "ok" : "FAIL");
    return failures == 0 ? 0 : 1;
}
