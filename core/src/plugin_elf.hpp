// What the plugin registry reads of a library's ELF headers before dlopen sees it.
// dlopen trusts them: it maps each PT_LOAD segment where the program headers say, and
// touching a page past the end of a truncated file kills the process with SIGBUS inside
// glibc, so such a file must be refused before. And a library built for another CPU gets
// glibc's "cannot open shared object file: No such file or directory", which sends a user
// looking for a missing file; its header says what it was built for.
#pragma once

#include <string>

namespace edgerun {

// Why `path` must not be handed to dlopen, in one line: not a regular file, built for
// another CPU, word size or byte order, or truncated (a segment or header table lies past
// the end of the file). Empty when the headers are sound, or when the file is not ELF at
// all (dlopen then says what is wrong, without touching the file's contents).
std::string plugin_elf_refusal(const std::string& path);

}  // namespace edgerun
