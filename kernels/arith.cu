// GPUArray's arithmetic, comparisons and logic: one kernel per (operation, dtype), named
// <op>_<dtype suffix> (add_f64, lt_i32), each taking a pygpu_ew_args (pygpu_elementwise.h).
// Inputs and output of a kernel have the dtype of its suffix (comparisons and logic write
// bool), except the int64/uint64 comparisons <op>_i64_u64 and <op>_u64_i64, which are numpy's
// own mixed loops; python/pygpu/gpuarray/_arithmetic.py casts other mixed operands to numpy's
// loop dtype first. Integer semantics are numpy's: wrap-around arithmetic; division and remainder by
// zero give 0 (numpy also gives 0, with a warning, which a GPU cannot raise); x // -1 and
// x % -1 never trap; a negative integer power gives 1 // base**|n| truncated (0 unless base is
// 1 or -1), where numpy raises.
#include "pygpu_elementwise.h"
#include "pygpu_math.h"

using namespace pygpu;

namespace {

// The math of a type's arithmetic: half computes in float, then rounds back.
template <class T>
struct wide {
  typedef T type;
};
template <>
struct wide<half> {
  typedef float type;
};

PYGPU_FN float to_wide(half h) { return to_float(h); }
template <class T>
PYGPU_FN T to_wide(T v) { return v; }
template <class T>
PYGPU_FN T from_wide(typename wide<T>::type v) { return cast_impl<T>::from(carry(v)); }

// Wrap-around integer arithmetic without signed overflow (undefined behaviour in C++).
typedef unsigned long long ull;
template <class T>
PYGPU_FN T wrap(ull v) { return (T)v; }

template <class T>
PYGPU_FN bool is_nan(T v) {
  if constexpr (is_complex<T>()) {
    return v.re != v.re || v.im != v.im;
  } else if constexpr (is_float<T>()) {
    return !(v == v);
  } else {
    return false;
  }
}

// Python's floor division and modulo of floats (numpy's divmod), in the wide type.
template <class R>
PYGPU_FN R float_floordiv(R a, R b) {
  if (b == 0) return a / b;
  const R mod = fmod_(a, b);
  R div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= R(1);
  if (div != 0) {
    R fl = floor_(div);
    if (div - fl > R(0.5)) fl += R(1);
    return fl;
  }
  return copysign_(R(0), a / b);
}
template <class R>
PYGPU_FN R float_mod(R a, R b) {
  if (b == 0) return fmod_(a, b);
  R mod = fmod_(a, b);
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = copysign_(R(0), b);
  }
  return mod;
}

template <class T>
PYGPU_FN T int_floordiv(T a, T b) {
  if (b == 0) return T(0);
  if constexpr (is_signed_int<T>()) {
    if (b == T(-1)) return wrap<T>(0ull - (ull)a);
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
  } else {
    return a / b;
  }
}
template <class T>
PYGPU_FN T int_mod(T a, T b) {
  if (b == 0) return T(0);
  if constexpr (is_signed_int<T>()) {
    if (b == T(-1)) return T(0);
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  } else {
    return a % b;
  }
}
template <class T>
PYGPU_FN T int_pow(T base, T exponent) {
  if constexpr (is_signed_int<T>()) {
    if (exponent < 0) {
      if (base == T(1)) return T(1);
      if (base == T(-1)) return (exponent & 1) ? T(-1) : T(1);
      return T(0);
    }
  }
  ull result = 1, b = (ull)base, e = (ull)exponent;
  while (e) {
    if (e & 1) result *= b;
    b *= b;
    e >>= 1;
  }
  return wrap<T>(result);
}

// numpy's complex power: exact repeated multiplication for small integer exponents, else
// exp(b log a).
template <class R>
PYGPU_FN complex<R> complex_pow(complex<R> a, complex<R> b) {
  if (b.re == 0 && b.im == 0) return make_complex(R(1), R(0));
  if (a.re == 0 && a.im == 0) {
    if (b.re > 0) return make_complex(R(0), R(0));
    const R nan = R(0) / R(0);
    return make_complex(nan, nan);
  }
  if (b.im == 0 && b.re == floor_(b.re) && fabs_(b.re) < R(100)) {
    long long n = (long long)b.re;
    const bool negative = n < 0;
    if (negative) n = -n;
    complex<R> result = make_complex(R(1), R(0)), x = a;
    while (n) {
      if (n & 1) result = result * x;
      x = x * x;
      n >>= 1;
    }
    return negative ? make_complex(R(1), R(0)) / result : result;
  }
  return complex_exp(b * complex_log(a));
}

// ------------------------------------------------------------------------------- binary

struct op_add {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) {
    if constexpr (is_int<T>()) return wrap<T>((ull)a + (ull)b);
    else if constexpr (traits<T>::kind == 'b') return a || b;
    else return a + b;
  }
};
struct op_sub {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) {
    if constexpr (is_int<T>()) return wrap<T>((ull)a - (ull)b);
    else return a - b;
  }
};
struct op_mul {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) {
    if constexpr (is_int<T>()) return wrap<T>((ull)a * (ull)b);
    else if constexpr (traits<T>::kind == 'b') return a && b;
    else return a * b;
  }
};
struct op_truediv {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) { return a / b; }
};
struct op_floordiv {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) {
    if constexpr (is_int<T>()) return int_floordiv(a, b);
    else return from_wide<T>(float_floordiv(to_wide(a), to_wide(b)));
  }
};
struct op_mod {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) {
    if constexpr (is_int<T>()) return int_mod(a, b);
    else return from_wide<T>(float_mod(to_wide(a), to_wide(b)));
  }
};
struct op_pow {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) {
    if constexpr (is_int<T>()) return int_pow(a, b);
    else if constexpr (is_complex<T>()) return complex_pow(a, b);
    else return from_wide<T>(pow_(to_wide(a), to_wide(b)));
  }
};
// numpy's maximum/minimum: a NaN operand wins.
struct op_maximum {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a >= b ? a : b;
  }
};
struct op_minimum {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return a <= b ? a : b;
  }
};

#define PYGPU_COMPARE(NAME, OP)                                   \
  struct op_##NAME {                                              \
    template <class Out, class T>                                 \
    PYGPU_FN static Out apply(T a, T b) { return a OP b; }        \
  };
PYGPU_COMPARE(eq, ==)
PYGPU_COMPARE(ne, !=)
PYGPU_COMPARE(lt, <)
PYGPU_COMPARE(le, <=)
PYGPU_COMPARE(gt, >)
PYGPU_COMPARE(ge, >=)
#undef PYGPU_COMPARE

// numpy's exact int64/uint64 comparisons (its qQ->? and Qq->? loops): a negative int64 is below
// every uint64, otherwise both compare as uint64. order(a, b) is <0, 0 or >0 as a <, ==, > b.
PYGPU_FN int order(long long a, unsigned long long b) {
  if (a < 0) return -1;
  return (ull)a < b ? -1 : ((ull)a > b ? 1 : 0);
}
PYGPU_FN int order(unsigned long long a, long long b) { return -order(b, a); }
#define PYGPU_COMPARE_MIXED(NAME, OP)                                        \
  struct op_##NAME##_mixed {                                                \
    template <class Out, class A, class B>                                  \
    PYGPU_FN static Out apply(A a, B b) { return order(a, b) OP 0; }        \
  };
PYGPU_COMPARE_MIXED(eq, ==)
PYGPU_COMPARE_MIXED(ne, !=)
PYGPU_COMPARE_MIXED(lt, <)
PYGPU_COMPARE_MIXED(le, <=)
PYGPU_COMPARE_MIXED(gt, >)
PYGPU_COMPARE_MIXED(ge, >=)
#undef PYGPU_COMPARE_MIXED

struct op_logical_and {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) { return cast<bool>(a) && cast<bool>(b); }
};
struct op_logical_or {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a, T b) { return cast<bool>(a) || cast<bool>(b); }
};

// -------------------------------------------------------------------------------- unary

struct op_neg {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a) {
    if constexpr (is_int<T>()) return wrap<T>(0ull - (ull)a);
    else return -a;
  }
};
struct op_abs {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a) {
    if constexpr (is_signed_int<T>()) return a < 0 ? wrap<T>(0ull - (ull)a) : a;
    else if constexpr (is_complex<T>()) return hypot_(a.re, a.im);
    else if constexpr (is_float<T>()) return fabs_(a);
    else return a;
  }
};
template <>
PYGPU_FN half op_abs::apply<half, half>(half a) { return half::from_bits((unsigned short)(a.bits & 0x7fffu)); }
struct op_conj {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a) { return make_complex(a.re, -a.im); }
};
struct op_logical_not {
  template <class Out, class T>
  PYGPU_FN static Out apply(T a) { return !cast<bool>(a); }
};

// ------------------------------------------------------------------------------ ternary

// where(condition, x, y); the condition is bool (the caller casts it).
struct op_where {
  template <class Out, class T>
  PYGPU_FN static Out apply(bool c, T x, T y) { return c ? x : y; }
};

// out = s0 * x + s1 * y (PyCUDA's axpbyz; axpbz is y a scalar and s1 = 1), in the type's own
// arithmetic: x and y are operands 1 and 2 (y may be the scalar in slot 2), s0 and s1 scalar
// slots 0 and 1.
template <class T>
PYGPU_FN void ew_axpbyz(const pygpu_ew_args& a) {
  const T s0 = scalar_arg<T>(a, 0), s1 = scalar_arg<T>(a, 1);
  const input<T> x(a, 1, 0), y(a, 2, 2);
  if (a.contiguous) {
    T* out = reinterpret_cast<T*>(a.ptr[0]);
    PYGPU_EW_LOOP(i, a.n) {
      out[i] = op_add::apply<T>(op_mul::apply<T>(s0, x.contiguous(i)), op_mul::apply<T>(s1, y.contiguous(i)));
    }
  } else {
    for_each_strided<3>(a, [&](const long long* off) {
      *at<T>(a.ptr[0], off[0]) =
          op_add::apply<T>(op_mul::apply<T>(s0, x.strided(off[1])), op_mul::apply<T>(s1, y.strided(off[2])));
    });
  }
}

}  // namespace

#define SAME(NAME, S, T) PYGPU_EW_KERNEL(NAME, S, ew_binary<op_##NAME, T, T>)
#define TO_BOOL(NAME, S, T) PYGPU_EW_KERNEL(NAME, S, ew_binary<op_##NAME, bool, T>)

#define ADD(S, T) SAME(add, S, T)
#define MUL(S, T) SAME(mul, S, T)
#define SUB(S, T) SAME(sub, S, T)
#define TRUEDIV(S, T) SAME(truediv, S, T)
#define FLOORDIV(S, T) SAME(floordiv, S, T)
#define MOD(S, T) SAME(mod, S, T)
#define POW(S, T) SAME(pow, S, T)
#define MAXIMUM(S, T) SAME(maximum, S, T)
#define MINIMUM(S, T) SAME(minimum, S, T)
#define COMPARE(S, T) \
  TO_BOOL(eq, S, T) TO_BOOL(ne, S, T) TO_BOOL(lt, S, T) TO_BOOL(le, S, T) TO_BOOL(gt, S, T) TO_BOOL(ge, S, T)
// <op>_i64_u64 and <op>_u64_i64: the mixed comparisons (in the u64 and i64 parts).
#define MIXED(NAME, S1, T1, S2, T2) PYGPU_EW_KERNEL(NAME##_##S1, S2, ew_binary<op_##NAME##_mixed, bool, T1, T2>)
#define COMPARE_MIXED(S1, T1, S2, T2)                                                            \
  MIXED(eq, S1, T1, S2, T2) MIXED(ne, S1, T1, S2, T2) MIXED(lt, S1, T1, S2, T2) MIXED(le, S1, T1, S2, T2) \
  MIXED(gt, S1, T1, S2, T2) MIXED(ge, S1, T1, S2, T2)
#define LOGICAL(S, T) \
  TO_BOOL(logical_and, S, T) TO_BOOL(logical_or, S, T) PYGPU_EW_KERNEL(logical_not, S, ew_unary<op_logical_not, bool, T>)
#define NEG(S, T) PYGPU_EW_KERNEL(neg, S, ew_unary<op_neg, T, T>)
#define ABS(S, T) PYGPU_EW_KERNEL(abs, S, ew_unary<op_abs, T, T>)
#define ABS_COMPLEX(S, T) PYGPU_EW_KERNEL(abs, S, ew_unary<op_abs, typename traits<T>::real_type, T>)
#define CONJ(S, T) PYGPU_EW_KERNEL(conj, S, ew_unary<op_conj, T, T>)
#define WHERE(S, T) PYGPU_EW_KERNEL(where, S, ew_ternary<op_where, T, bool, T>)
#define AXPBYZ(S, T) PYGPU_EW_KERNEL(axpbyz, S, ew_axpbyz<T>)

PYGPU_FOR_BOOL_TYPES(ADD)
PYGPU_FOR_NUMERIC_TYPES(ADD)
PYGPU_FOR_NUMERIC_TYPES(SUB)
PYGPU_FOR_BOOL_TYPES(MUL)
PYGPU_FOR_NUMERIC_TYPES(MUL)
PYGPU_FOR_INEXACT_TYPES(TRUEDIV)
PYGPU_FOR_REAL_TYPES(FLOORDIV)
PYGPU_FOR_REAL_TYPES(MOD)
PYGPU_FOR_NUMERIC_TYPES(POW)
PYGPU_FOR_ALL_TYPES(MAXIMUM)
PYGPU_FOR_ALL_TYPES(MINIMUM)
PYGPU_FOR_ALL_TYPES(COMPARE)
COMPARE_MIXED(i64, long long, u64, unsigned long long)
COMPARE_MIXED(u64, unsigned long long, i64, long long)
PYGPU_FOR_ALL_TYPES(LOGICAL)
PYGPU_FOR_NUMERIC_TYPES(NEG)
PYGPU_FOR_BOOL_TYPES(ABS)
PYGPU_FOR_REAL_TYPES(ABS)
PYGPU_FOR_COMPLEX_TYPES(ABS_COMPLEX)
PYGPU_FOR_COMPLEX_TYPES(CONJ)
PYGPU_FOR_ALL_TYPES(WHERE)
PYGPU_FOR_NUMERIC_TYPES(AXPBYZ)
