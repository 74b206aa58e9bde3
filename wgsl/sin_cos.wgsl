// WGSL's sin and cos promise only 2**-11 absolute error, and only on [-pi, pi] (SwiftShader's are that
// coarse). Ours: reduce by pi/2 in three parts (Cody-Waite; exact products for |x| below about 5e4),
// then minimax polynomials on [-pi/4, pi/4] (Cephes' sinf and cosf coefficients): a few ulp.
fn sc_quadrant(x: f32) -> vec3<f32> {
  let q = round(x * 0.63661977236758134);
  let r = ((x - q * 1.5703125) - q * 4.837512969970703125e-4) - q * 7.549789954891882e-8;
  let z = r * r;
  let s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
  let c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
  return vec3<f32>(s, c, f32(i32(q) & 3));
}
fn sc_sin(x: f32) -> f32 {
  let v = sc_quadrant(x);
  let n = i32(v.z);
  let y = select(v.x, v.y, (n & 1) == 1);
  return select(y, -y, n >= 2);
}
fn sc_cos(x: f32) -> f32 {
  let v = sc_quadrant(x);
  let n = i32(v.z);
  let y = select(v.y, v.x, (n & 1) == 1);
  return select(y, -y, n == 1 || n == 2);
}
