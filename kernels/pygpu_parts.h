// Building one source as several modules, one per dtype ("part"; the table is
// python/pygpu/_toolchain/kernel_parts.py). kernels/build.sh compiles a split source once per part with
// PYGPU_PARTS defined and PYGPU_PART_<suffix> defined as `~, 1` for each kernel-name suffix that
// part holds; PYGPU_PART_KEEP(SUFFIX)(definitions) then keeps the definitions only in that part.
// Without PYGPU_PARTS (a whole-source build) every kernel is kept.
//
// How: PYGPU_PART_SELECTED(S) is the second item of `PYGPU_PART_S, 0, ~`, which is 1 where
// PYGPU_PART_S expands to `~, 1` and 0 where it is an undefined name.
#pragma once

#define PYGPU_PART_CAT_(a, b) a##b
#define PYGPU_PART_CAT(a, b) PYGPU_PART_CAT_(a, b)
#define PYGPU_PART_SECOND_(a, b, ...) b
#define PYGPU_PART_SECOND(...) PYGPU_PART_SECOND_(__VA_ARGS__)
#define PYGPU_PART_KEEP_1(...) __VA_ARGS__
#define PYGPU_PART_KEEP_0(...)
#ifdef PYGPU_PARTS
#define PYGPU_PART_SELECTED(SUFFIX) PYGPU_PART_SECOND(PYGPU_PART_##SUFFIX, 0, ~)
#else
#define PYGPU_PART_SELECTED(SUFFIX) 1
#endif
#define PYGPU_PART_KEEP(SUFFIX) PYGPU_PART_CAT(PYGPU_PART_KEEP_, PYGPU_PART_SELECTED(SUFFIX))
