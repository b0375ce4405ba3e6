#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <istream>
#include <xenhsa/backend/service/line_channel.hpp>

namespace xenhsa::backend::service {

std::string to_line(const nlohmann::json& message) {
    std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line += '\n';
    return line;
}

std::shared_ptr<LineChannel> LineChannel::create(Socket socket) {
    return std::shared_ptr<LineChannel>(new LineChannel(std::move(socket)));
}

LineChannel::LineChannel(Socket socket) : socket_(std::move(socket)) {}

LineChannel::~LineChannel() { close(); }

void LineChannel::start(MessageHandler on_message, CloseHandler on_close) {
    on_message_ = std::move(on_message);
    on_close_ = std::move(on_close);
    read();
}

void LineChannel::read() {
    boost::asio::async_read_until(
        socket_, in_, '\n',
        [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
            if (!self->open_) {
                return;
            }
            if (ec == boost::asio::error::eof) {
                self->fail({});
                return;
            }
            if (ec == boost::asio::error::not_found) {  // the line outgrew kMaxLine
                self->fail(std::make_error_code(std::errc::protocol_error));
                return;
            }
            if (ec) {
                self->fail(std::error_code(ec.value(), std::generic_category()));
                return;
            }
            std::string line(n, '\0');
            std::istream(&self->in_).read(line.data(), static_cast<std::streamsize>(n));
            auto message = nlohmann::json::parse(line, nullptr, false);
            if (message.is_discarded() || !message.is_object()) {
                self->fail(std::make_error_code(std::errc::protocol_error));
                return;
            }
            // The handler may close the channel (which drops on_message_): call a copy;
            // `self` keeps the channel alive meanwhile.
            if (auto handler = self->on_message_) {
                handler(message);
            }
            if (self->open_) {
                self->read();
            }
        });
}

void LineChannel::send(const nlohmann::json& message) {
    if (!open_ || closing_) {
        return;
    }
    out_.push_back(to_line(message));
    if (!writing_) {
        write();
    }
}

void LineChannel::close_after_send() {
    if (!writing_) {
        close();
        return;
    }
    closing_ = true;
}

void LineChannel::write() {
    writing_ = true;
    boost::asio::async_write(
        socket_, boost::asio::buffer(out_.front()),
        [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
            self->writing_ = false;
            if (!self->open_) {
                return;
            }
            if (ec) {
                self->fail(std::error_code(ec.value(), std::generic_category()));
                return;
            }
            self->out_.pop_front();
            if (!self->out_.empty()) {
                self->write();
            } else if (self->closing_) {
                self->close();
            }
        });
}

void LineChannel::fail(std::error_code ec) {
    auto on_close = std::move(on_close_);
    close();
    if (on_close) {
        on_close(ec);
    }
}

void LineChannel::close() noexcept {
    open_ = false;
    on_message_ = nullptr;
    on_close_ = nullptr;
    boost::system::error_code ignored;
    socket_.shutdown(Socket::shutdown_both, ignored);
    socket_.close(ignored);
}

}  // namespace xenhsa::backend::service
