// Counts heap allocations made by the current thread while a CountAllocations is alive
// (the test binary replaces the global operator new). Used to check that revoke_range()
// and teardown() never allocate.
#ifndef XENHSA_TESTS_HSA_ALLOC_COUNTER_HPP
#define XENHSA_TESTS_HSA_ALLOC_COUNTER_HPP

#include <cstddef>

namespace xenhsa::hsa::test {

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

}  // namespace xenhsa::hsa::test

#endif
