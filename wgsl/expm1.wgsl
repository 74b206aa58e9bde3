// exp(x) - 1 cancels for small |x| (entirely below 2**-24). For |x| < 0.5, Taylor through x^9/9! in
// Horner form: a few ulp (the first dropped term is below 1e-9 of the result). Elsewhere exp(x) - 1
// multiplies exp's relative error by e^x / |e^x - 1|, at most 2.6.
fn sc_expm1(x: f32) -> f32 {
  if (abs(x) >= 0.5) {
    return exp(x) - 1.0;
  }
  var p: f32 = 2.755731922398589e-6;
  p = p * x + 2.48015873015873e-5;
  p = p * x + 1.984126984126984e-4;
  p = p * x + 1.388888888888889e-3;
  p = p * x + 8.333333333333333e-3;
  p = p * x + 4.166666666666667e-2;
  p = p * x + 0.16666666666666666;
  p = p * x + 0.5;
  p = p * x + 1.0;
  return p * x;
}
