#include "kfd_process.hpp"

#include <linux/kfd_ioctl.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <vector>
#include <xenhsa/hsa/soft_agent.hpp>

#include "call_log.hpp"
#include "machine.hpp"

namespace xenhsa::kfd_shim {

namespace {

// What the kernel's ioctl table says each command's struct is (kfd_chardev.c
// amdkfd_ioctls): the caller's size may differ; the kernel copies what both have.
struct Command {
    unsigned nr;
    const char* name;
    size_t size;
    int (KfdProcess::*handler)(void*);
};

uint64_t now_ns(clockid_t clock) {
    timespec ts{};
    ::clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

KfdProcess::KfdProcess(const ShimOptions& options) : options_(options) {
    (void)maps_.open();
    hsa::SoftAgentOptions agent;
    agent.gfx = hsa::SoftGfx::gfx900;
    agent.local_mem_size = kVramBytes;
    agent.max_events = KFD_SIGNAL_EVENT_LIMIT;
    gpu_ = hsa::make_soft_agent(agent);
    gpu_->set_fault_handler([this](const hsa::GpuFault& fault) { on_gpu_fault(fault); });
}

KfdProcess::~KfdProcess() {
    evictor_ = {};  // stopped and joined while the GPU it stops queues on still exists
    gpu_->set_fault_handler({});
    gpu_.reset();
}

int KfdProcess::ioctl(unsigned long request, void* arg) {
    static const Command kCommands[] = {
        {0x01, "GET_VERSION", sizeof(kfd_ioctl_get_version_args), &KfdProcess::get_version},
        {0x02, "CREATE_QUEUE", sizeof(kfd_ioctl_create_queue_args), &KfdProcess::create_queue},
        {0x03, "DESTROY_QUEUE", sizeof(kfd_ioctl_destroy_queue_args), &KfdProcess::destroy_queue},
        {0x04, "SET_MEMORY_POLICY", sizeof(kfd_ioctl_set_memory_policy_args),
         &KfdProcess::set_memory_policy},
        {0x05, "GET_CLOCK_COUNTERS", sizeof(kfd_ioctl_get_clock_counters_args),
         &KfdProcess::get_clock_counters},
        {0x07, "UPDATE_QUEUE", sizeof(kfd_ioctl_update_queue_args), &KfdProcess::update_queue},
        {0x08, "CREATE_EVENT", sizeof(kfd_ioctl_create_event_args), &KfdProcess::create_event},
        {0x09, "DESTROY_EVENT", sizeof(kfd_ioctl_destroy_event_args), &KfdProcess::destroy_event},
        {0x0A, "SET_EVENT", sizeof(kfd_ioctl_set_event_args), &KfdProcess::set_event},
        {0x0B, "RESET_EVENT", sizeof(kfd_ioctl_reset_event_args), &KfdProcess::reset_event},
        {0x0C, "WAIT_EVENTS", sizeof(kfd_ioctl_wait_events_args), &KfdProcess::wait_events},
        {0x12, "GET_TILE_CONFIG", sizeof(kfd_ioctl_get_tile_config_args),
         &KfdProcess::get_tile_config},
        {0x14, "GET_PROCESS_APERTURES_NEW", sizeof(kfd_ioctl_get_process_apertures_new_args),
         &KfdProcess::get_process_apertures_new},
        {0x15, "ACQUIRE_VM", sizeof(kfd_ioctl_acquire_vm_args), &KfdProcess::acquire_vm},
        {0x16, "ALLOC_MEMORY_OF_GPU", sizeof(kfd_ioctl_alloc_memory_of_gpu_args),
         &KfdProcess::alloc_memory},
        {0x17, "FREE_MEMORY_OF_GPU", sizeof(kfd_ioctl_free_memory_of_gpu_args),
         &KfdProcess::free_memory},
        {0x18, "MAP_MEMORY_TO_GPU", sizeof(kfd_ioctl_map_memory_to_gpu_args),
         &KfdProcess::map_memory},
        {0x19, "UNMAP_MEMORY_FROM_GPU", sizeof(kfd_ioctl_unmap_memory_from_gpu_args),
         &KfdProcess::unmap_memory},
        {0x21, "SET_XNACK_MODE", sizeof(kfd_ioctl_set_xnack_mode_args),
         &KfdProcess::set_xnack_mode},
    };
    const unsigned nr = _IOC_NR(request);
    const Command* command = nullptr;
    for (const Command& c : kCommands) {
        if (c.nr == nr) {
            command = &c;
        }
    }
    alignas(8) unsigned char args[256] = {};
    if (_IOC_TYPE(request) != AMDKFD_IOCTL_BASE || command == nullptr || arg == nullptr ||
        command->size > sizeof args) {
        call_log().line("kfd " + hex(nr) + " (not emulated) -> EINVAL");
        return EINVAL;
    }
    // As kfd_ioctl: the caller's bytes in, zero-extended to the kernel's size, and the
    // caller's size back out.
    const size_t user_size = _IOC_SIZE(request);
    std::memcpy(args, arg, std::min(user_size, command->size));
    const int err = (this->*command->handler)(args);
    if (err == 0 && (_IOC_DIR(request) & _IOC_READ) != 0) {
        std::memcpy(arg, args, std::min(user_size, command->size));
    }
    return err;
}

int KfdProcess::get_version(void* arg) {
    auto& a = *static_cast<kfd_ioctl_get_version_args*>(arg);
    a.major_version = KFD_IOCTL_MAJOR_VERSION;
    a.minor_version = KFD_IOCTL_MINOR_VERSION;
    call_log().line("kfd GET_VERSION -> ok " + std::to_string(a.major_version) + "." +
                    std::to_string(a.minor_version));
    return 0;
}

// kfd_init_apertures_v9 for a gfx9 dGPU in 64-bit mode.
int KfdProcess::get_process_apertures_new(void* arg) {
    auto& a = *static_cast<kfd_ioctl_get_process_apertures_new_args*>(arg);
    if (a.num_of_nodes == 0) {
        a.num_of_nodes = 1;  // how many the caller needs room for
        call_log().line("kfd GET_PROCESS_APERTURES_NEW nodes=0 -> ok nodes=1");
        return 0;
    }
    kfd_process_device_apertures apertures{};
    apertures.lds_base = uint64_t{1} << 48;
    apertures.lds_limit = apertures.lds_base | 0xffffffffull;
    apertures.scratch_base = uint64_t{2} << 48;
    apertures.scratch_limit = apertures.scratch_base | 0xffffffffull;
    apertures.gpuvm_base = kGpuVmBase;
    apertures.gpuvm_limit = kGpuVmLimit;
    apertures.gpu_id = kGpuId;
    std::memcpy(reinterpret_cast<void*>(a.kfd_process_device_apertures_ptr), &apertures,
                sizeof apertures);
    a.num_of_nodes = 1;
    call_log().line("kfd GET_PROCESS_APERTURES_NEW -> ok gpu_id=" + std::to_string(kGpuId));
    return 0;
}

// kfd_ioctl_acquire_vm: the render fd's VM becomes the process's; another fd later is
// EBUSY (pdd->drm_file).
int KfdProcess::acquire_vm(void* arg) {
    const auto& a = *static_cast<kfd_ioctl_acquire_vm_args*>(arg);
    int err = 0;
    if (a.gpu_id != kGpuId) {
        err = EINVAL;
    } else if (is_render_fd_ == nullptr || !is_render_fd_(static_cast<int>(a.drm_fd))) {
        err = EBADF;
    } else {
        const std::lock_guard lock(mutex_);
        if (drm_fd_ >= 0 && drm_fd_ != static_cast<int>(a.drm_fd)) {
            err = EBUSY;
        } else {
            drm_fd_ = static_cast<int>(a.drm_fd);
        }
    }
    call_log().line("kfd ACQUIRE_VM drm_fd=" + std::to_string(a.drm_fd) + " -> " +
                    result_text(err));
    return err;
}

int KfdProcess::set_memory_policy(void* arg) {
    const auto& a = *static_cast<kfd_ioctl_set_memory_policy_args*>(arg);
    const bool ok = a.gpu_id == kGpuId && a.default_policy <= KFD_IOC_CACHE_POLICY_NONCOHERENT &&
                    a.alternate_policy <= KFD_IOC_CACHE_POLICY_NONCOHERENT;
    const int err = ok ? 0 : EINVAL;
    call_log().line("kfd SET_MEMORY_POLICY -> " + result_text(err));
    return err;
}

// kfd_ioctl_get_clock_counters: the GPU's counter (0 for a node without a GPU, such as the
// CPU's, which ROCr asks for the system clock), CLOCK_MONOTONIC_RAW and BOOTTIME in ns.
int KfdProcess::get_clock_counters(void* arg) {
    auto& a = *static_cast<kfd_ioctl_get_clock_counters_args*>(arg);
    const auto clock = gpu_->clock(hsa::kSoftGpuNode);
    a.gpu_clock_counter = a.gpu_id == kGpuId && clock ? clock.value().gpu_clock_counter : 0;
    a.cpu_clock_counter = now_ns(CLOCK_MONOTONIC_RAW);
    a.system_clock_counter = now_ns(CLOCK_BOOTTIME);
    a.system_clock_freq = 1000000000ull;
    return 0;
}

// kfd_ioctl_get_tile_config: the GPU's (the software agent's gfx900 answer); as the
// kernel, at most the entries the caller has room for, and how many were copied.
int KfdProcess::get_tile_config(void* arg) {
    auto& a = *static_cast<kfd_ioctl_get_tile_config_args*>(arg);
    const auto config = gpu_->tile_config(hsa::kSoftGpuNode);
    if (a.gpu_id != kGpuId || !config) {
        call_log().line("kfd GET_TILE_CONFIG -> EINVAL");
        return EINVAL;
    }
    const xenhsa_tile_config& t = config.value();
    a.num_tile_configs = std::min(a.num_tile_configs, t.num_tile_configs);
    a.num_macro_tile_configs = std::min(a.num_macro_tile_configs, t.num_macro_tile_configs);
    if (a.num_tile_configs != 0) {
        std::memcpy(reinterpret_cast<void*>(a.tile_config_ptr), t.tile_config,
                    a.num_tile_configs * sizeof(uint32_t));
    }
    if (a.num_macro_tile_configs != 0) {
        std::memcpy(reinterpret_cast<void*>(a.macro_tile_config_ptr), t.macro_tile_config,
                    a.num_macro_tile_configs * sizeof(uint32_t));
    }
    a.gb_addr_config = t.gb_addr_config;
    a.num_banks = t.num_banks;
    a.num_ranks = t.num_ranks;
    call_log().line("kfd GET_TILE_CONFIG -> ok");
    return 0;
}

// kfd_ioctl_set_xnack_mode: gfx900 has no XNACK; off is accepted (while no queue exists),
// on is EPERM, a negative value asks.
int KfdProcess::set_xnack_mode(void* arg) {
    auto& a = *static_cast<kfd_ioctl_set_xnack_mode_args*>(arg);
    int err = 0;
    if (a.xnack_enabled > 0) {
        err = EPERM;
    } else if (a.xnack_enabled == 0) {
        const std::lock_guard lock(mutex_);
        err = queues_.empty() ? 0 : EBUSY;
    } else {
        a.xnack_enabled = 0;
    }
    call_log().line("kfd SET_XNACK_MODE -> " + result_text(err));
    return err;
}

void KfdProcess::log_holdings(const char* when) {
    const std::lock_guard lock(mutex_);
    std::string held;
    for (const auto& [handle, bo] : bos_) {
        static constexpr const char* kNames[] = {"USERPTR", "VRAM", "GTT", "DOORBELL", "MMIO"};
        held += held.empty() ? " held=" : ",";
        held += kNames[static_cast<int>(bo.kind)];
        held += handle == events_page_ ? ":signal-page" : ":" + hex(bo.va);
    }
    call_log().line(std::string(when) + " bos=" + std::to_string(bos_.size()) + held + " queues=" +
                    std::to_string(queues_.size()) + " events=" + std::to_string(events_.size()));
}

}  // namespace xenhsa::kfd_shim
