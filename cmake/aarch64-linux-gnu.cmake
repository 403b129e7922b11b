# Cross-compiling for aarch64 Linux (Jetson's CPU) with Debian's gcc cross compiler against
# a sysroot of arm64 libraries, the one scripts/aarch64-check.sh unpacks. Tests run under
# qemu-aarch64's user-mode emulation.
#   EDGERUN_SYSROOT=DIR cmake -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake ...
# The sysroot comes from the environment, not a cache variable, because CMake reads a
# toolchain file again for every try_compile and for the projects tests configure.
if(NOT DEFINED ENV{EDGERUN_SYSROOT})
  message(FATAL_ERROR "aarch64-linux-gnu.cmake: set EDGERUN_SYSROOT to the arm64 sysroot (scripts/aarch64-check.sh makes one)")
endif()
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_SYSROOT $ENV{EDGERUN_SYSROOT})
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} $ENV{EDGERUN_SYSROOT})
set(ENV{PKG_CONFIG_LIBDIR} "$ENV{EDGERUN_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:$ENV{EDGERUN_SYSROOT}/usr/share/pkgconfig")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L $ENV{EDGERUN_SYSROOT})
