#pragma once
// Checks that an expression throws and that the message contains a text.
// doctest::Contains arrived in doctest 2.4.9; Ubuntu 22.04 (JetPack 6) packages 2.4.8.
#include <doctest/doctest.h>

#include <exception>
#include <string>

#define CHECK_THROWS_CONTAINING_AS(expr, text, type)                                               \
    do {                                                                                           \
        std::string thrown_what_;                                                                  \
        bool thrown_as_type_ = false, thrown_other_ = false;                                       \
        try {                                                                                      \
            static_cast<void>(expr);                                                               \
        } catch (const type& e) {                                                                  \
            thrown_as_type_ = true;                                                                \
            thrown_what_ = e.what();                                                               \
        } catch (...) {                                                                            \
            thrown_other_ = true;                                                                  \
        }                                                                                          \
        const std::string thrown_how_ = thrown_other_ ? " threw something else than " : " did not throw "; \
        CHECK_MESSAGE(thrown_as_type_, #expr, thrown_how_, #type);                                 \
        if (thrown_as_type_)                                                                       \
            CHECK_MESSAGE(thrown_what_.find(text) != std::string::npos, "\"", thrown_what_,        \
                          "\" does not contain \"", text, "\"");                                   \
    } while (false)

#define CHECK_THROWS_CONTAINING(expr, text) CHECK_THROWS_CONTAINING_AS(expr, text, std::exception)
