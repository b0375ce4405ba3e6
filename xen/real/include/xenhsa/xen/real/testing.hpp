// Test hooks: the real adapters without a library handle, for machines without Xen.
//
// Argument validation runs exactly as in production (it comes first in every call);
// anything that would reach the library instead fails with EBADF. None of these ever
// produces a mapping, a shared page or a bound port. Not for production use.
#ifndef XENHSA_XEN_REAL_TESTING_HPP
#define XENHSA_XEN_REAL_TESTING_HPP

#include <memory>
#include <xenhsa/xen/platform.hpp>

namespace xenhsa::xen::real::testing {

std::unique_ptr<GrantMapper> detached_grant_mapper();
std::unique_ptr<GrantSharer> detached_grant_sharer();
std::unique_ptr<EventChannel> detached_event_channel();
std::unique_ptr<Store> detached_store();
std::unique_ptr<ForeignMemory> detached_foreign_memory();

}  // namespace xenhsa::xen::real::testing

#endif
