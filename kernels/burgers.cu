// 1-D viscous Burgers equation u_t + u u_x = nu u_xx on a periodic domain: forward Euler in time,
// central differences in space. Arrays hold n_total = NX + 2 values: NX interior points at
// 1..NX and one ghost point at each end (u[0] mirrors u[NX], u[NX+1] mirrors u[1]).
// Coefficients: nu_dt_h2 = nu*dt/h^2, dt_2h = dt/(2h).
//
// Every kernel loops with a grid stride, so any 1-D launch configuration covers every point.
#include "pygpu_kernel.h"

__device__ __forceinline__ double burgers_update(double left, double centre, double right,
                                                 double nu_dt_h2, double dt_2h) {
  return centre + nu_dt_h2 * (right - 2.0 * centre + left) - centre * dt_2h * (right - left);
}

// One time step of the interior points; reads u's ghosts, so call burgers_ghosts(u) first.
PYGPU_KERNEL void burgers_step(const double* u, double* u_new, int n_total, double nu_dt_h2,
                               double dt_2h) {
  const long long stride = (long long)blockDim.x * gridDim.x;
  for (long long i = 1 + (long long)blockIdx.x * blockDim.x + threadIdx.x; i <= n_total - 2;
       i += stride)
    u_new[i] = burgers_update(u[i - 1], u[i], u[i + 1], nu_dt_h2, dt_2h);
}
PYGPU_EXPORT(burgers_step)

// Periodic ghost points: u[0] = u[NX], u[NX+1] = u[1]. Needs no more than one thread.
PYGPU_KERNEL void burgers_ghosts(double* u, int n_total) {
  if (blockIdx.x == 0 && threadIdx.x == 0 && n_total >= 3) {
    u[0] = u[n_total - 2];
    u[n_total - 1] = u[1];
  }
}
PYGPU_EXPORT(burgers_ghosts)

// Fused variant, one launch per step instead of two: takes the periodic neighbours directly
// (so it never reads u's ghosts) and writes u_new's ghosts along with its interior.
// Same arithmetic as burgers_ghosts + burgers_step, so the results agree bit for bit.
PYGPU_KERNEL void burgers_step_periodic(const double* u, double* u_new, int n_total,
                                        double nu_dt_h2, double dt_2h) {
  const long long nx = n_total - 2;
  const long long stride = (long long)blockDim.x * gridDim.x;
  for (long long i = 1 + (long long)blockIdx.x * blockDim.x + threadIdx.x; i <= nx; i += stride) {
    const double left = i == 1 ? u[nx] : u[i - 1];
    const double right = i == nx ? u[1] : u[i + 1];
    const double v = burgers_update(left, u[i], right, nu_dt_h2, dt_2h);
    u_new[i] = v;
    if (i == nx) u_new[0] = v;
    if (i == 1) u_new[nx + 1] = v;
  }
}
PYGPU_EXPORT(burgers_step_periodic)

// The seeds' step (the ALCF/OCCA Burgers demo's update_burger), also one launch per step: the
// interior update reads u's ghosts as they are, and u_new's ghosts are copied from u's interior,
// so the boundary neighbours lag one step behind. This is the scheme behind the seeds' printed
// u[10] = 0.0733873 (NX = 256, nu = 0.01, dt = 0.001, 2001 steps); burgers_step_periodic gives
// 0.0733934. u's ghosts must be periodic at the start (u[0] = u[NX], u[NX+1] = u[1]).
PYGPU_KERNEL void burgers_step_lagged(const double* u, double* u_new, int n_total,
                                      double nu_dt_h2, double dt_2h) {
  const long long nx = n_total - 2;
  const long long stride = (long long)blockDim.x * gridDim.x;
  for (long long i = 1 + (long long)blockIdx.x * blockDim.x + threadIdx.x; i <= nx; i += stride) {
    u_new[i] = burgers_update(u[i - 1], u[i], u[i + 1], nu_dt_h2, dt_2h);
    if (i == nx) u_new[0] = u[nx];
    if (i == 1) u_new[nx + 1] = u[1];
  }
}
PYGPU_EXPORT(burgers_step_lagged)
