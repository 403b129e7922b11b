#include "plugin_elf.hpp"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace edgerun {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kThisMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kThisMachine = EM_AARCH64;
#else
constexpr uint16_t kThisMachine = EM_NONE;  // not checked
#endif

constexpr unsigned char kThisClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
constexpr unsigned char kThisByteOrder = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;

// This host's own ELF structures: dlopen maps only files of its class and byte order, and
// those are the only ones whose program headers are read here.
using Ehdr = ElfW(Ehdr);
using Phdr = ElfW(Phdr);

std::string machine_name(uint16_t machine, bool wide) {
    switch (machine) {
        case EM_X86_64: return "x86-64";
        case EM_AARCH64: return "aarch64";
        case EM_386: return "32-bit x86";
        case EM_ARM: return "32-bit arm";
        case EM_RISCV: return wide ? "riscv64" : "riscv32";
        case EM_PPC64: return "ppc64";
        default: return "ELF machine " + std::to_string(machine);
    }
}

std::string byte_order_name(unsigned char data) { return data == ELFDATA2LSB ? "little-endian" : "big-endian"; }

std::string this_host() {
    const bool wide = kThisClass == ELFCLASS64;
    return "this host is " + (kThisMachine != EM_NONE ? machine_name(kThisMachine, wide) : wide ? "64-bit" : "32-bit");
}

// A file descriptor closed on scope exit.
struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
};

// Reads up to `size` bytes at `offset`; returns how many there were (fewer at the end).
size_t read_at(int fd, uint64_t offset, void* out, size_t size) {
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::pread(fd, static_cast<char*>(out) + done, size - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
    }
    return done;
}

// "truncated ELF: <what> ends at byte E of a S-byte file" when [offset, offset + size)
// does not lie inside the file; empty when it does.
std::string past_the_end(const std::string& what, uint64_t offset, uint64_t size, uint64_t file_size) {
    if (offset <= file_size && size <= file_size - offset) return {};
    const std::string end = size <= UINT64_MAX - offset ? std::to_string(offset + size) : "2^64 or more";
    return "truncated ELF: " + what + " ends at byte " + end + " of a " + std::to_string(file_size) + "-byte file";
}

// Why a file of another CPU, word size or byte order is not ours; empty when it is.
// `ident` holds the first EI_NIDENT + 4 bytes: e_ident, e_type, e_machine.
std::string foreign_reason(const unsigned char* ident) {
    const unsigned char byte_order = ident[EI_DATA], word = ident[EI_CLASS];
    if (byte_order != ELFDATA2LSB && byte_order != ELFDATA2MSB)
        return "invalid ELF header: its byte order (EI_DATA) is " + std::to_string(byte_order) + ", neither 1 nor 2";
    // e_machine in the file's byte order: only meaningful when that is ours, or the file
    // is really from a CPU of the other order (then its number is right, but unnamed here).
    if (byte_order != kThisByteOrder)
        return "built for a " + byte_order_name(byte_order) + " CPU (the other byte order), " + this_host() + " (" +
               byte_order_name(kThisByteOrder) + ")";
    const unsigned char* m = ident + EI_NIDENT + 2;  // e_machine, after e_type
    const uint16_t machine = byte_order == ELFDATA2LSB ? uint16_t(m[0] | m[1] << 8) : uint16_t(m[0] << 8 | m[1]);
    if (word != ELFCLASS32 && word != ELFCLASS64)
        return "invalid ELF header: its word size (EI_CLASS) is " + std::to_string(word) + ", neither 1 nor 2";
    const bool wide = word == ELFCLASS64;
    const bool same_machine = kThisMachine == EM_NONE || machine == kThisMachine;  // EM_NONE: not checked
    if (same_machine && word == kThisClass) return {};
    std::string built_for = machine_name(machine, wide);
    if (machine == kThisMachine) built_for += wide ? ", 64-bit" : ", 32-bit";
    return "built for " + built_for + ", " + this_host();
}

}  // namespace

std::string plugin_elf_refusal(const std::string& path) {
    // Before opening: opening a FIFO for reading blocks until a writer comes.
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return "not a regular file";
    Fd file;
    file.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (file.fd < 0) return std::string("cannot open it: ") + std::strerror(errno);
    if (::fstat(file.fd, &st) != 0) return std::string("cannot stat it: ") + std::strerror(errno);
    if (!S_ISREG(st.st_mode)) return "not a regular file";  // replaced since the stat above
    const auto file_size = static_cast<uint64_t>(st.st_size);

    Ehdr header{};
    const size_t got = read_at(file.fd, 0, &header, sizeof header);
    if (got < SELFMAG || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return {};
    if (got < EI_NIDENT + 4) return past_the_end("the ELF header", 0, sizeof header, file_size);
    if (std::string reason = foreign_reason(header.e_ident); !reason.empty()) return reason;
    if (got < sizeof header) return past_the_end("the ELF header", 0, sizeof header, file_size);

    if (header.e_phnum > 0 && header.e_phentsize != sizeof(Phdr))
        return "invalid ELF header: program header entries of " + std::to_string(header.e_phentsize) +
               " bytes, expected " + std::to_string(sizeof(Phdr));
    const uint64_t program_table_size = uint64_t{header.e_phnum} * sizeof(Phdr);
    if (std::string reason = past_the_end("the program header table", header.e_phoff, program_table_size, file_size);
        !reason.empty())
        return reason;

    // The segments first: dlopen maps them, and a part past the end is what crashes it.
    std::vector<Phdr> segments(header.e_phnum);
    if (read_at(file.fd, header.e_phoff, segments.data(), program_table_size) != program_table_size)
        return "truncated ELF: the program header table could not be read whole";  // shrunk meanwhile
    for (size_t i = 0; i < segments.size(); ++i) {
        const Phdr& segment = segments[i];
        if (segment.p_type == PT_NULL) continue;
        if (std::string reason = past_the_end("segment " + std::to_string(i), segment.p_offset, segment.p_filesz, file_size);
            !reason.empty())
            return reason;
    }
    // Not mapped, but the table is at the end of the file, so a cut there is seen too.
    if (header.e_shoff != 0) {
        // e_shnum 0 with a table present: the real count is in the first entry (ELF's
        // extended numbering), so at least that one must be there.
        const uint64_t entries = header.e_shnum > 0 ? header.e_shnum : 1;
        if (std::string reason = past_the_end("the section header table", header.e_shoff,
                                              entries * header.e_shentsize, file_size);
            !reason.empty())
            return reason;
    }
    return {};
}

}  // namespace edgerun
