/*
 * xenhsa wire protocol v1: QUERY, everything a guest-side libhsakmt needs to answer
 * ROCm's topology calls (hsaKmtAcquireSystemProperties, GetNode{,Memory,Cache,IoLink}
 * Properties, GetClockCounters, GetVersion, GetXNACKMode) plus the software agent's
 * built-in kernels.
 *
 * These are xenhsa's own structs, converted field by field from the host thunk's: no
 * libhsakmt struct crosses the wire, so guest and host thunk versions may differ.
 * A result is a fixed-layout struct read in chunks: QUERY{kind, node, index, offset}
 * answers with bytes [offset, offset + chunk_len) of it and its total_len. XNACK is
 * always reported off (xenhsa pins; it never relies on GPU page-fault retry).
 */
#ifndef XENHSA_PROTO_QUERY_H
#define XENHSA_PROTO_QUERY_H

#include "common.h"

enum xenhsa_query_kind {
    XENHSA_QUERY_VERSION = 1,     /* -> struct xenhsa_version_info */
    XENHSA_QUERY_SYSTEM = 2,      /* -> struct xenhsa_system_props */
    XENHSA_QUERY_NODE = 3,        /* node -> struct xenhsa_node_props */
    XENHSA_QUERY_MEM_BANK = 4,    /* node, index -> struct xenhsa_mem_bank */
    XENHSA_QUERY_CACHE = 5,       /* node, index -> struct xenhsa_cache */
    XENHSA_QUERY_IO_LINK = 6,     /* node, index -> struct xenhsa_io_link */
    XENHSA_QUERY_CLOCK = 7,       /* node -> struct xenhsa_clock_counters */
    XENHSA_QUERY_KERNEL = 8,      /* index -> struct xenhsa_kernel_info */
    XENHSA_QUERY_TILE_CONFIG = 9, /* node -> struct xenhsa_tile_config (GPU nodes) */
    XENHSA_QUERY_KIND_COUNT_ = 10
};

#define XENHSA_QUERY_MAX_NODES 64u
#define XENHSA_QUERY_MAX_INDEX 1024u
#define XENHSA_QUERY_CHUNK_MAX 224u
#define XENHSA_NAME_SIZE 64u

struct xenhsa_query_req {
    uint32_t kind;   /* enum xenhsa_query_kind */
    uint32_t node;   /* < XENHSA_QUERY_MAX_NODES; 0 for kinds without a node */
    uint32_t index;  /* < XENHSA_QUERY_MAX_INDEX; 0 for kinds without an index */
    uint32_t offset; /* byte offset into the result: < 4096 here, and the backend also
                        requires offset < total_len (0 is always allowed) */
};
XENHSA_WIRE_STRUCT(struct xenhsa_query_req, 16);

struct xenhsa_query_rsp {
    uint32_t total_len; /* size of the whole result struct */
    uint32_t chunk_len; /* bytes valid in data; <= XENHSA_QUERY_CHUNK_MAX */
    uint8_t data[XENHSA_QUERY_CHUNK_MAX];
};
XENHSA_WIRE_STRUCT(struct xenhsa_query_rsp, 232);

struct xenhsa_version_info {
    uint32_t kfd_major; /* what hsaKmtGetVersion reports to the guest */
    uint32_t kfd_minor;
    uint32_t proto_version;
    uint32_t gpu_backend; /* enum xenhsa_gpu_backend */
};
XENHSA_WIRE_STRUCT(struct xenhsa_version_info, 16);

enum xenhsa_gpu_backend {
    XENHSA_GPU_BACKEND_NONE = 0,
    XENHSA_GPU_BACKEND_KFD = 1, /* the host's libhsakmt and /dev/kfd */
    XENHSA_GPU_BACKEND_SOFT = 2 /* the software AQL agent */
};

struct xenhsa_system_props {
    uint32_t num_nodes;
    uint32_t platform_oem;
    uint32_t platform_id;
    uint32_t platform_rev;
    uint32_t xnack_enabled; /* always 0 */
    uint32_t num_kernels;   /* QUERY_KERNEL indices 0..num_kernels-1 exist */
};
XENHSA_WIRE_STRUCT(struct xenhsa_system_props, 24);

struct xenhsa_node_props {
    uint32_t num_cpu_cores;
    uint32_t num_fcompute_cores;
    uint32_t num_memory_banks;
    uint32_t num_caches;
    uint32_t num_io_links;
    uint32_t ccompute_id_lo;
    uint32_t fcompute_id_lo;
    uint32_t capability; /* HSA_CAPABILITY bits */
    uint32_t max_waves_per_simd;
    uint32_t lds_size_kb;
    uint32_t gds_size_kb;
    uint32_t wavefront_size;
    uint32_t num_shader_banks;
    uint32_t num_arrays;
    uint32_t num_cu_per_array;
    uint32_t num_simd_per_cu;
    uint32_t max_slots_scratch_cu;
    uint32_t engine_id; /* HSA_ENGINE_ID value: ucode:10 major:6 minor:8 stepping:8 */
    uint32_t vendor_id;
    uint32_t device_id;
    uint32_t location_id;
    uint32_t domain;
    uint64_t local_mem_size;
    uint32_t max_engine_clock_mhz_fcompute;
    uint32_t max_engine_clock_mhz_ccompute;
    int32_t drm_render_minor;
    uint32_t num_sdma_engines;
    uint32_t num_sdma_xgmi_engines;
    uint32_t num_sdma_queues_per_engine;
    uint32_t num_cp_queues;
    uint32_t num_gws;
    uint32_t ucode_engine_versions;
    uint32_t vgpr_size_per_cu;
    uint32_t sgpr_size_per_cu;
    uint32_t num_xcc; /* compute dies (XCCs) of a GPU; 0: one (a backend that does not say) */
    uint64_t debug_properties;
    uint64_t hive_id;
    uint64_t unique_id;
    uint8_t marketing_name[XENHSA_NAME_SIZE]; /* UTF-8, NUL-terminated */
    uint8_t amd_name[XENHSA_NAME_SIZE];       /* ASCII, NUL-terminated */
};
XENHSA_WIRE_STRUCT(struct xenhsa_node_props, 296);
XENHSA_FIELD_AT(struct xenhsa_node_props, local_mem_size, 88);
XENHSA_FIELD_AT(struct xenhsa_node_props, debug_properties, 144);
XENHSA_FIELD_AT(struct xenhsa_node_props, marketing_name, 168);

/* Values of HSA_HEAPTYPE. */
enum xenhsa_heap_type {
    XENHSA_HEAP_SYSTEM = 0,
    XENHSA_HEAP_FB_PUBLIC = 1,
    XENHSA_HEAP_FB_PRIVATE = 2,
    XENHSA_HEAP_GPU_GDS = 3,
    XENHSA_HEAP_GPU_LDS = 4,
    XENHSA_HEAP_GPU_SCRATCH = 5
};

struct xenhsa_mem_bank {
    uint32_t heap_type; /* enum xenhsa_heap_type */
    uint32_t flags;     /* HSA_MEMORYPROPERTY bits */
    uint64_t size_bytes;
    uint32_t width;
    uint32_t mem_clock_max;
    uint64_t virtual_base;
};
XENHSA_WIRE_STRUCT(struct xenhsa_mem_bank, 32);

struct xenhsa_cache {
    uint32_t processor_id_low;
    uint32_t level;
    uint32_t size;
    uint32_t line_size;
    uint32_t lines_per_tag;
    uint32_t associativity;
    uint32_t latency;
    uint32_t type;            /* HsaCacheType bits: data, instruction, cpu, hsacu */
    uint64_t sibling_bits[4]; /* SiblingMap[256] as a bitmap: bit i = SiblingMap[i] != 0 */
};
XENHSA_WIRE_STRUCT(struct xenhsa_cache, 64);

struct xenhsa_io_link {
    uint32_t type; /* HSA_IOLINKTYPE */
    uint32_t version_major;
    uint32_t version_minor;
    uint32_t node_from;
    uint32_t node_to;
    uint32_t weight;
    uint32_t min_latency;
    uint32_t max_latency;
    uint32_t min_bandwidth;
    uint32_t max_bandwidth;
    uint32_t rec_transfer_size;
    uint32_t flags; /* HSA_LINKPROPERTY bits */
};
XENHSA_WIRE_STRUCT(struct xenhsa_io_link, 48);

struct xenhsa_clock_counters {
    uint64_t gpu_clock_counter;
    uint64_t cpu_clock_counter;
    uint64_t system_clock_counter;
    uint64_t system_clock_frequency_hz; /* never 0 */
};
XENHSA_WIRE_STRUCT(struct xenhsa_clock_counters, 32);

#define XENHSA_TILE_CONFIGS_MAX 32u
#define XENHSA_MACRO_TILE_CONFIGS_MAX 16u

/* A GPU's tiling setup as the KFD reports it (AMDKFD_IOC_GET_TILE_CONFIG), for ROCr's
 * image support (hsaKmtGetTileConfig), which HIP initialises. A CPU node answers
 * INVALID_ARG; a device that cannot tell answers UNSUPPORTED. */
struct xenhsa_tile_config {
    uint32_t gb_addr_config;
    uint32_t num_banks;
    uint32_t num_ranks;
    uint32_t num_tile_configs;       /* <= XENHSA_TILE_CONFIGS_MAX */
    uint32_t num_macro_tile_configs; /* <= XENHSA_MACRO_TILE_CONFIGS_MAX */
    uint32_t pad;
    uint32_t tile_config[XENHSA_TILE_CONFIGS_MAX];
    uint32_t macro_tile_config[XENHSA_MACRO_TILE_CONFIGS_MAX];
};
XENHSA_WIRE_STRUCT(struct xenhsa_tile_config, 216);

#define XENHSA_KERNEL_NAME_SIZE 40u

struct xenhsa_kernel_info {
    uint64_t kernel_object; /* the value to put in an AQL dispatch packet's kernel_object */
    uint32_t kernarg_size;
    uint32_t group_segment_size;
    uint32_t private_segment_size;
    uint32_t pad;
    uint8_t name[XENHSA_KERNEL_NAME_SIZE]; /* ASCII, NUL-terminated */
};
XENHSA_WIRE_STRUCT(struct xenhsa_kernel_info, 64);

#endif /* XENHSA_PROTO_QUERY_H */
