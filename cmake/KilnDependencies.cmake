# Every external dependency, found once. All come from Debian 12 packages
# (scripts/install-deps.sh); CUDA is optional and libcuda is never linked.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(TBB REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(SQLite3 REQUIRED)
# ICU: the Unicode database behind str methods on non-ASCII text and unicodedata.
find_package(ICU 72 REQUIRED COMPONENTS uc)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
# oneDNN (libdnnl-dev) runs float32 GEMMs (core/ops/gemm_onednn.cpp). Only its
# headers are used at build time: the library is opened with dlopen on first
# use, after libgomp's wait policy is set, and OpenBLAS runs when it is absent.
if(KILN_ONEDNN)
  find_path(KILN_ONEDNN_INCLUDE_DIR oneapi/dnnl/dnnl.h REQUIRED)
endif()
pkg_check_modules(NETTLE REQUIRED IMPORTED_TARGET nettle)  # MD5 (core/util/md5.h)
# Python's `re` (core/python/stdlib_re.cpp) and the minifier's output patterns:
# RE2 matches in linear time and bounded stack, whatever the text.
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)  # zipped repro files (minifier/repro_zip.cpp)
pkg_check_modules(GRAPHVIZ REQUIRED IMPORTED_TARGET libgvc libcgraph)  # graph layout (session/)
# Header-only Mustache templates for `kiln-cli trace report` (core/trace/report.cpp).
find_path(KAINJOW_MUSTACHE_INCLUDE_DIR kainjow/mustache.hpp REQUIRED)

if(KILN_WITH_LLVM)
  find_package(LLVM 19.1 CONFIG REQUIRED HINTS /usr/lib/llvm-19/lib/cmake/llvm)
  message(STATUS "Kiln: LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
endif()

if(KILN_BUILD_GUI)
  find_package(Qt6 6.4 REQUIRED COMPONENTS Core Gui Widgets Test)
else()
  find_package(Qt6 6.4 QUIET COMPONENTS Core Test)
endif()

# The GPU backend needs no CUDA at build time: NVRTC and the driver are loaded
# with dlopen when first used (compiler/codegen/cuda/cuda_api.h).

