// Counts heap allocations made by the current thread while a CountAllocations is alive.
// The test binary that links alloc_counter.cpp replaces the global operator new.
#ifndef XENHSA_TESTS_BACKEND_CORE_ALLOC_COUNTER_HPP
#define XENHSA_TESTS_BACKEND_CORE_ALLOC_COUNTER_HPP

#include <cstddef>

namespace xenhsa::backend::core::testing {

class CountAllocations {
public:
    CountAllocations();
    ~CountAllocations();
    CountAllocations(const CountAllocations&) = delete;
    CountAllocations& operator=(const CountAllocations&) = delete;

    [[nodiscard]] std::size_t count() const;

private:
    std::size_t start_;
};

}  // namespace xenhsa::backend::core::testing

#endif
