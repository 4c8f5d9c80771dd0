-- Gradients by `vjp` for benchmarks/ad_gradient.py: the squared error of a
-- logistic model, and a loop of smoothing steps over a vector.

def loss [n][d] (X: [n][d]f32) (y: [n]f32) (w: [d]f32) : f32 =
  let preds = map (\row -> 1 / (1 + f32.exp (-(f32.sum (map2 (*) row w))))) X
  in f32.sum (map2 (\p t -> (p - t) * (p - t)) preds y)

entry logistic_loss [n][d] (X: [n][d]f32) (y: [n]f32) (w: [d]f32) : f32 = loss X y w

entry logistic_grad [n][d] (X: [n][d]f32) (y: [n]f32) (w: [d]f32) : [d]f32 =
  vjp (loss X y) w 1

-- `steps` rounds of a three-point stencil with a non-linearity; the
-- gradient of the sum of squares of the result.
def smooth [n] (steps: i64) (xs: [n]f32) : f32 =
  let ys = loop ys = xs for _i < steps do
             tabulate n (\i -> let l = ys[i64.max 0 (i - 1)]
                               let r = ys[i64.min (n - 1) (i + 1)]
                               in f32.tanh (0.25 * l + 0.5 * ys[i] + 0.25 * r))
  in f32.sum (map (\y -> y * y) ys)

entry smooth_value [n] (steps: i64) (xs: [n]f32) : f32 = smooth steps xs

entry smooth_grad [n] (steps: i64) (xs: [n]f32) : [n]f32 = vjp (smooth steps) xs 1
