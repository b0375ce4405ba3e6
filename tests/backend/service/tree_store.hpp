// An in-process xen::Store over sim::StoreTree (one connection), and a Platform around it,
// for driving the worker's xenbus state machine without any daemon or process.
#ifndef XENHSA_TESTS_BACKEND_SERVICE_TREE_STORE_HPP
#define XENHSA_TESTS_BACKEND_SERVICE_TREE_STORE_HPP

#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include <xenhsa/xen/platform.hpp>
#include <xenhsa/xen/sim/store_tree.hpp>

namespace xenhsa::test {

class TreeStore final : public xen::Store {
public:
    TreeStore(xen::sim::StoreTree& tree, xen::DomId domid)
        : tree_(tree), conn_(tree.open_connection(domid).value()) {}
    ~TreeStore() override { (void)tree_.close_connection(conn_); }

    xen::Result<std::string> read(xen::TxId tx, std::string_view path) override {
        return tree_.read(conn_, path, tx);
    }
    xen::Result<void> write(xen::TxId tx, std::string_view path, std::string_view value) override {
        if (fail_writes) {
            return xen::errc(std::errc::io_error);
        }
        return tree_.write(conn_, path, value, tx);
    }
    xen::Result<void> mkdir(xen::TxId tx, std::string_view path) override {
        return tree_.mkdir(conn_, path, tx);
    }
    xen::Result<void> rm(xen::TxId tx, std::string_view path) override {
        return tree_.rm(conn_, path, tx);
    }
    xen::Result<std::vector<std::string>> directory(xen::TxId tx, std::string_view path) override {
        return tree_.directory(conn_, path, tx);
    }
    xen::Result<std::vector<xen::StorePerm>> get_perms(xen::TxId tx,
                                                       std::string_view path) override {
        return tree_.get_perms(conn_, path, tx);
    }
    xen::Result<void> set_perms(xen::TxId tx, std::string_view path,
                                const std::vector<xen::StorePerm>& perms) override {
        return tree_.set_perms(conn_, path, perms, tx);
    }
    xen::Result<xen::TxId> transaction_start() override { return tree_.transaction_start(conn_); }
    xen::Result<void> transaction_end(xen::TxId tx, bool commit) override {
        return tree_.transaction_end(conn_, tx, commit);
    }
    xen::Result<void> watch(std::string_view path, std::string_view token) override {
        return tree_.watch(conn_, path, token);
    }
    xen::Result<void> unwatch(std::string_view path, std::string_view token) override {
        return tree_.unwatch(conn_, path, token);
    }
    [[nodiscard]] int fd() const noexcept override { return -1; }
    xen::Result<std::optional<xen::WatchEvent>> next_event() override {
        return tree_.next_event(conn_);
    }

    bool fail_writes = false;

private:
    xen::sim::StoreTree& tree_;
    xen::sim::ConnId conn_;
};

class FixedDomains final : public xen::Domains {
public:
    explicit FixedDomains(xen::DomId self) : self_(self) {}
    [[nodiscard]] xen::DomId self() const noexcept override { return self_; }
    xen::Result<bool> alive(xen::DomId) override { return true; }

private:
    xen::DomId self_;
};

}  // namespace xenhsa::test

#endif
