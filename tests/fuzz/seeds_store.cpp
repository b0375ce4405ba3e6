// Seeds of the "store" target (input format: store_fuzz.cpp).
#include <string>
#include <string_view>

#include "seeds.hpp"

namespace xenhsa::fuzz {
namespace {

// Indices into store_fuzz.cpp's kKeys.
enum Key : uint8_t {
    kOrder = 0,
    kRingRef,
    kRingRef0,
    kRingRef1,
    kRingRef2,
    kRingRef3,
    kRingRef7,
    kNotify,
    kDoorbell,
    kEvent,
    kState
};
// Limit choices of the differential parse.
enum Limit : uint8_t { kMax9 = 5, kMax10 = 6, kMaxU32 = 9, kMaxU64 = 11 };

class Script {
public:
    // The differential parse first, then the device's config byte (max ring order).
    Script(std::string_view value, uint8_t limit, uint8_t max_order) {
        b_.str(value).u8(limit).u8(max_order);
    }
    Script& write(uint8_t key, std::string_view value) {
        b_.u8(0).u8(key).u8(0).str(value);  // value kind 0: raw bytes
        return *this;
    }
    Script& write_named(std::string_view key, std::string_view value) {
        b_.u8(1).u8(0xFF).str(key).u8(0).str(value);
        return *this;
    }
    Script& rm(uint8_t key) {
        b_.u8(3).u8(key);
        return *this;
    }
    Script& state(uint8_t s) {
        b_.u8(4).u8(s);
        return *this;
    }
    Script& state_text(std::string_view s) {
        b_.u8(5).u8(0).str(s);
        return *this;
    }
    Script& rm_dir() {
        b_.u8(6).u8(0);
        return *this;
    }
    Script& fail_next_connect() {
        b_.u8(6).u8(1);
        return *this;
    }
    Script& settle() {
        b_.u8(7);
        return *this;
    }
    // The standard keys of an order-0 ring.
    Script& keys() {
        return write(kRingRef, "100")
            .write(kNotify, "200")
            .write(kDoorbell, "201")
            .write(kEvent, "9");
    }
    [[nodiscard]] const std::vector<uint8_t>& bytes() const { return b_.bytes(); }

private:
    SeedBytes b_;
};

}  // namespace

void store_seeds(SeedSet& out) {
    const auto add = [&](const char* name, const Script& s) { out.add("store", name, s.bytes()); };

    add("connect-reconnect", Script("4294967295", kMaxU32, 3)
                                 .keys()
                                 .state(3)
                                 .state(4)
                                 .state(5)
                                 .state(6)
                                 .state(1)
                                 .write(kEvent, "10")
                                 .state(3)
                                 .state(1)
                                 .settle());
    add("order-2", Script("3", 0, 3)
                       .write(kOrder, "2")
                       .write(kRingRef, "bogus")
                       .write(kRingRef0, "100")
                       .write(kRingRef1, "101")
                       .write(kRingRef2, "102")
                       .write(kRingRef3, "103")
                       .write(kNotify, "200")
                       .write(kDoorbell, "201")
                       .write(kEvent, "4294967295")
                       .state(3));
    add("order-above-max", Script("10", kMax9, 1)
                               .write(kOrder, "2")
                               .write(kRingRef0, "1")
                               .write(kRingRef1, "2")
                               .write(kNotify, "3")
                               .write(kDoorbell, "4")
                               .write(kEvent, "5")
                               .state(3));
    add("leading-zero", Script("00", kMax10, 3).keys().write(kNotify, "0200").state(3));
    add("sign-and-space", Script("+1", kMaxU64, 3)
                              .keys()
                              .write(kDoorbell, " 201")
                              .state(3)
                              .state(1)
                              .write(kDoorbell, "+201")
                              .state(3));
    add("out-of-range", Script("18446744073709551616", kMaxU64, 3)
                            .keys()
                            .write(kEvent, "4294967296")
                            .state(3)
                            .state(1)
                            .write(kEvent, "99999999999999999999999")
                            .state(3));
    add("late-garbage", Script("99999x", kMax9, 3)
                            .keys()
                            .write(kEvent, "99999999999x")
                            .state(3)
                            .state(1)
                            .write(kEvent, "12345678901234567890123")
                            .state(3));
    add("missing-key", Script("", 0, 3).keys().rm(kNotify).state(3).state(1).state(4));
    add("grant-named-twice", Script("100", kMax10, 3)
                                 .keys()
                                 .write(kNotify, "100")
                                 .state(3)
                                 .state(1)
                                 .write(kNotify, "200")
                                 .write(kDoorbell, "200")
                                 .state(3));
    add("bad-state", Script("9", kMax9, 3)
                         .keys()
                         .state_text("Initialised")
                         .state_text("3 ")
                         .state(3)
                         .state_text("")
                         .state(9));
    add("guest-dies", Script("18446744073709551615", kMaxU64, 3)
                          .keys()
                          .state(3)
                          .rm_dir()
                          .settle()
                          .keys()
                          .state(1)
                          .state(3));
    add("connect-fails", Script("0", 0, 0)
                             .keys()
                             .fail_next_connect()
                             .state(3)
                             .state(1)
                             .state(4)
                             .write_named("ring-ref-extra", "x")
                             .write(kRingRef7, "7")
                             .state(7));
}

}  // namespace xenhsa::fuzz
