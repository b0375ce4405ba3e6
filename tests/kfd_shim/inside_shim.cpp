#include "inside_shim.hpp"

namespace xenhsa::kfd_shim {

namespace {
thread_local bool t_inside = false;
}  // namespace

bool inside_shim() noexcept { return t_inside; }

InsideShim::InsideShim() noexcept : was_(t_inside) { t_inside = true; }

InsideShim::~InsideShim() { t_inside = was_; }

}  // namespace xenhsa::kfd_shim
