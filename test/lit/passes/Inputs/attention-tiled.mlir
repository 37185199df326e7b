// A causal grouped-query attention after spyre-stickify and spyre-fuse: queries stored as the
// [1, 100, 128] fp16 projection (two 64-element heads a row), one key/value head [1, 100, 64],
// the head transposes folded into the kernel. The core split and tile are fixed by hand (as a
// user override would): grid [2, 2] = 2 heads x 2 halves of the 100 query rows, tiles of 50
// query rows with the head's 100 key rows and the 64-wide value in LX. Tests of the later
// passes start here so they do not move when the cost model is retuned.
builtin.module {
  func.func @forward(%q: tensor<1x100x128xf16> {spyre.layout = {stick_dim = 2 : i64, padded_shape = array<i64: 1, 100, 128>, device_dtype = "dl16", pad = "zero"}}, %k: tensor<1x100x64xf16> {spyre.layout = {stick_dim = 2 : i64, padded_shape = array<i64: 1, 100, 64>, device_dtype = "dl16", pad = "zero"}}, %v: tensor<1x100x64xf16> {spyre.layout = {stick_dim = 2 : i64, padded_shape = array<i64: 1, 100, 64>, device_dtype = "dl16", pad = "zero"}}) -> tensor<1x100x128xf16> {
    %ot = spyre.kernel "k0"(%q, %k, %v) {grid = [2 : i64, 2 : i64], tile = [50 : i64, 64 : i64, 100 : i64], fused = ["view", "permute", "view_1", "permute_1", "view_2", "permute_2", "sdpa", "permute_3"], reason = "attention with its row moves folded into its reads and write", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 100, 2, 64>, device_dtype = "dl16", pad = "zero"}} : (tensor<1x100x128xf16>, tensor<1x100x64xf16>, tensor<1x100x64xf16>) -> tensor<1x100x2x64xf16> {
    ^bb0(%q_1: tensor<1x100x128xf16>, %k_1: tensor<1x100x64xf16>, %v_1: tensor<1x100x64xf16>):
      %qv = spyre.reshape %q_1 {fx_node = "view", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 100, 2, 64>, device_dtype = "dl16", pad = "zero"}} : tensor<1x100x128xf16> -> tensor<1x100x2x64xf16>
      %qt = spyre.permute_rows %qv {fx_node = "permute", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 2, 100, 64>, device_dtype = "dl16", pad = "zero"}, permutation = array<i64: 0, 2, 1, 3>} : tensor<1x100x2x64xf16> -> tensor<1x2x100x64xf16>
      %kv = spyre.reshape %k_1 {fx_node = "view_1", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 100, 1, 64>, device_dtype = "dl16", pad = "zero"}} : tensor<1x100x64xf16> -> tensor<1x100x1x64xf16>
      %kt = spyre.reshape %kv {fx_node = "permute_1", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 1, 100, 64>, device_dtype = "dl16", pad = "zero"}} : tensor<1x100x1x64xf16> -> tensor<1x1x100x64xf16>
      %vv = spyre.reshape %v_1 {fx_node = "view_2", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 100, 1, 64>, device_dtype = "dl16", pad = "zero"}} : tensor<1x100x64xf16> -> tensor<1x100x1x64xf16>
      %vt = spyre.reshape %vv {fx_node = "permute_2", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 1, 100, 64>, device_dtype = "dl16", pad = "zero"}} : tensor<1x100x1x64xf16> -> tensor<1x1x100x64xf16>
      %o = spyre.attention %qt, %kt, %vt {fx_node = "sdpa", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 2, 100, 64>, device_dtype = "dl16", pad = "zero"}, scale = 1.250000e-01 : f64, causal} : tensor<1x2x100x64xf16>, tensor<1x1x100x64xf16>, tensor<1x1x100x64xf16> -> tensor<1x2x100x64xf16>
      %ot_1 = spyre.permute_rows %o {fx_node = "permute_3", spyre.layout = {stick_dim = 3 : i64, padded_shape = array<i64: 1, 100, 2, 64>, device_dtype = "dl16", pad = "zero"}, permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x100x64xf16> -> tensor<1x100x2x64xf16>
      spyre.yield %ot_1 : tensor<1x100x2x64xf16>
    }
    %m = spyre.reshape %ot {fx_node = "view_3", spyre.layout = {stick_dim = 2 : i64, padded_shape = array<i64: 1, 100, 128>, device_dtype = "dl16", pad = "zero"}} : tensor<1x100x2x64xf16> -> tensor<1x100x128xf16>
    func.return %m : tensor<1x100x128xf16>
  }
}

