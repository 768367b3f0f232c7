// math_constants.h for the host backend: the CUDA runtime's CUDART_* constants, so that kernels
// written for nvcc (`#include <math_constants.h>`) build with the system C++ compiler without a
// CUDA toolkit. pygpu's own: each value was computed to 300 bits (mpmath) and rounded to the
// type's nearest (the _HI/_LO pairs: the value's nearest, then the remainder's), and checked
// equal, type included, to the CUDA 13 runtime's. The special values use the host header's
// __int_as_float and __longlong_as_double, as on a device. The runtime's implementation-only
// constants (CUDART_TRIG_PLOSS*, CUDART_REMQUO_*, CUDART_NORM_HUGE_F, CUDART_DBL2INT_CVT) are
// left out. On cuda, the toolkit's own header is used.
#pragma once
#ifndef __MATH_CONSTANTS_H__
#define __MATH_CONSTANTS_H__

#define CUDART_INF_F             __int_as_float(0x7f800000U)
#define CUDART_NAN_F             __int_as_float(0x7fffffffU)
#define CUDART_MIN_DENORM_F      __int_as_float(0x00000001U)
#define CUDART_MAX_NORMAL_F      __int_as_float(0x7f7fffffU)
#define CUDART_NEG_ZERO_F        __int_as_float(0x80000000U)
#define CUDART_ZERO_F            0.0f
#define CUDART_ONE_F             1.0f
#define CUDART_SQRT_HALF_F       7.071067691e-01f
#define CUDART_SQRT_HALF_HI_F    7.071067691e-01f
#define CUDART_SQRT_HALF_LO_F    1.210161749e-08f
#define CUDART_SQRT_TWO_F        1.414213538e+00f
#define CUDART_THIRD_F           3.333333433e-01f
#define CUDART_PIO4_F            7.853981853e-01f
#define CUDART_PIO2_F            1.570796371e+00f
#define CUDART_3PIO4_F           2.356194496e+00f
#define CUDART_2_OVER_PI_F       6.366197467e-01f
#define CUDART_SQRT_2_OVER_PI_F  7.978845835e-01f
#define CUDART_PI_F              3.141592741e+00f
#define CUDART_L2E_F             1.442695022e+00f
#define CUDART_L2T_F             3.321928024e+00f
#define CUDART_LG2_F             3.010300100e-01f
#define CUDART_LGE_F             4.342944920e-01f
#define CUDART_LN2_F             6.931471825e-01f
#define CUDART_LNT_F             2.302585125e+00f
#define CUDART_LNPI_F            1.144729853e+00f
#define CUDART_TWO_TO_M126_F     1.175494351e-38f
#define CUDART_TWO_TO_126_F      8.507059173e+37f
#define CUDART_TWO_TO_23_F       8.388608000e+06f
#define CUDART_TWO_TO_24_F       1.677721600e+07f
#define CUDART_TWO_TO_31_F       2.147483648e+09f
#define CUDART_TWO_TO_32_F       4.294967296e+09f
#define CUDART_INF               __longlong_as_double(0x7ff0000000000000ULL)
#define CUDART_NAN               __longlong_as_double(0xfff8000000000000ULL)
#define CUDART_NEG_ZERO          __longlong_as_double(0x8000000000000000ULL)
#define CUDART_MIN_DENORM        __longlong_as_double(0x0000000000000001ULL)
#define CUDART_ZERO              0.0
#define CUDART_ONE               1.0
#define CUDART_SQRT_TWO          1.4142135623730951
#define CUDART_SQRT_HALF         0.7071067811865476
#define CUDART_SQRT_HALF_HI      0.7071067811865476
#define CUDART_SQRT_HALF_LO      -4.833646656726457e-17
#define CUDART_THIRD             0.3333333333333333
#define CUDART_TWOTHIRD          0.6666666666666666
#define CUDART_PIO4              0.7853981633974483
#define CUDART_PIO4_HI           0.7853981633974483
#define CUDART_PIO4_LO           3.061616997868383e-17
#define CUDART_PIO2              1.5707963267948966
#define CUDART_PIO2_HI           1.5707963267948966
#define CUDART_PIO2_LO           6.123233995736766e-17
#define CUDART_3PIO4             2.356194490192345
#define CUDART_2_OVER_PI         0.6366197723675814
#define CUDART_PI                3.141592653589793
#define CUDART_PI_HI             3.141592653589793
#define CUDART_PI_LO             1.2246467991473532e-16
#define CUDART_SQRT_2PI          2.5066282746310007
#define CUDART_SQRT_2PI_HI       2.5066282746310007
#define CUDART_SQRT_2PI_LO       -1.8328579980459167e-16
#define CUDART_SQRT_PIO2         1.2533141373155003
#define CUDART_SQRT_PIO2_HI      1.2533141373155003
#define CUDART_SQRT_PIO2_LO      -9.164289990229583e-17
#define CUDART_SQRT_2OPI         0.7978845608028654
#define CUDART_L2E               1.4426950408889634
#define CUDART_L2E_HI            1.4426950408889634
#define CUDART_L2E_LO            2.0355273740931033e-17
#define CUDART_L2T               3.321928094887362
#define CUDART_LG2               0.3010299956639812
#define CUDART_LG2_HI            0.3010299956639812
#define CUDART_LG2_LO            -2.8037281277851704e-18
#define CUDART_LGE               0.4342944819032518
#define CUDART_LGE_HI            0.4342944819032518
#define CUDART_LGE_LO            1.098319650216765e-17
#define CUDART_LN2               0.6931471805599453
#define CUDART_LN2_HI            0.6931471805599453
#define CUDART_LN2_LO            2.3190468138462996e-17
#define CUDART_LNT               2.302585092994046
#define CUDART_LNT_HI            2.302585092994046
#define CUDART_LNT_LO            -2.1707562233822494e-16
#define CUDART_LNPI              1.1447298858494002
#define CUDART_LN2_X_1024        709.782712893384
#define CUDART_LN2_X_1025        710.475860073944
#define CUDART_LN2_X_1075        745.1332191019412
#define CUDART_LG2_X_1024        308.25471555991675
#define CUDART_LG2_X_1075        323.60724533877976
#define CUDART_TWO_TO_23         8388608.0
#define CUDART_TWO_TO_52         4503599627370496.0
#define CUDART_TWO_TO_53         9007199254740992.0
#define CUDART_TWO_TO_54         1.8014398509481984e+16
#define CUDART_TWO_TO_M54        5.551115123125783e-17
#define CUDART_TWO_TO_M1022      2.2250738585072014e-308

#endif
