// Counts heap allocations made by the current thread while a CountAllocations is alive
// (a test binary that links xenhsa::test_alloc_counter replaces the global operator new).
// Used to check that revoke paths never allocate.
#ifndef XENHSA_TESTS_SUPPORT_ALLOC_COUNTER_HPP
#define XENHSA_TESTS_SUPPORT_ALLOC_COUNTER_HPP

#include <cstddef>

namespace xenhsa::testing {

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

}  // namespace xenhsa::testing

#endif
