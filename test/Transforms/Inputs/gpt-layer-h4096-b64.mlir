// One GPT layer (pre-norm; hidden 4096, 32 heads, sequence 128, batch 64, f16)
// as weft-translate --import-onnx writes it, before canonicalization; made by
//   test/E2E/make_gpt.py --out gpt-layer.onnx --layer-only --hidden 4096 \
//     --heads 32 --seq 128 --batch 64 --dtype f16 --zero-weights --external-data
// The planner never reads the weights' bytes, so the data file is not needed.
module attributes {weft.opset = 17 : i64, weft.weights_dir = "."} {
  func.func @main(%arg0: tensor<64x128x4096xf16> {weft.name = "hidden_in"}) -> (tensor<64x128x4096xf16> {weft.name = "hidden_out"}) {
    %0 = weft.weight "h0.ln1.scale" from "gpt-layer.onnx.data" offset 0 size 8192 checksum "620797930ab0991a" : tensor<4096xf16>
    %1 = weft.weight "h0.ln1.bias" from "gpt-layer.onnx.data" offset 8192 size 8192 checksum "620797930ab0991a" : tensor<4096xf16>
    %result, %mean, %inv_std_dev = weft.normalize layer %arg0, %0, %1 axis 2 epsilon 1.000000e-05 {stash_type = f32} : (tensor<64x128x4096xf16>, tensor<4096xf16>, tensor<4096xf16>) -> (tensor<64x128x4096xf16>, tensor<64x128x1xf32>, tensor<64x128x1xf32>)
    %2 = weft.weight "h0.attn.qkv.weight" from "gpt-layer.onnx.data" offset 16384 size 100663296 checksum "ba05ff4c8d8f668e" : tensor<4096x12288xf16>
    %3 = weft.matmul %result, %2 : (tensor<64x128x4096xf16>, tensor<4096x12288xf16>) -> tensor<64x128x12288xf16>
    %4 = weft.weight "h0.attn.qkv.bias" from "gpt-layer.onnx.data" offset 100679680 size 24576 checksum "4414446bfcbb0c21" : tensor<12288xf16>
    %5 = weft.binary add %3, %4 : (tensor<64x128x12288xf16>, tensor<12288xf16>) -> tensor<64x128x12288xf16>
    %6 = weft.constant dense<0> : tensor<1xi64>
    %7 = weft.constant dense<4096> : tensor<1xi64>
    %8 = weft.constant dense<1> : tensor<1xi64>
    %9 = weft.slice %5[%6, %7, %8] axes = [2] : (tensor<64x128x12288xf16>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<64x128x4096xf16>
    %10 = weft.constant dense<4096> : tensor<1xi64>
    %11 = weft.constant dense<8192> : tensor<1xi64>
    %12 = weft.constant dense<1> : tensor<1xi64>
    %13 = weft.slice %5[%10, %11, %12] axes = [2] : (tensor<64x128x12288xf16>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<64x128x4096xf16>
    %14 = weft.constant dense<8192> : tensor<1xi64>
    %15 = weft.constant dense<12288> : tensor<1xi64>
    %16 = weft.constant dense<1> : tensor<1xi64>
    %17 = weft.slice %5[%14, %15, %16] axes = [2] : (tensor<64x128x12288xf16>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<64x128x4096xf16>
    %18 = weft.constant dense<[0, 0, 32, 128]> : tensor<4xi64>
    %19 = weft.reshape %9, %18 : (tensor<64x128x4096xf16>, tensor<4xi64>) -> tensor<64x128x32x128xf16>
    %20 = weft.reshape %13, %18 : (tensor<64x128x4096xf16>, tensor<4xi64>) -> tensor<64x128x32x128xf16>
    %21 = weft.reshape %17, %18 : (tensor<64x128x4096xf16>, tensor<4xi64>) -> tensor<64x128x32x128xf16>
    %22 = weft.transpose %19 perm = [0, 2, 1, 3] : tensor<64x128x32x128xf16> -> tensor<64x32x128x128xf16>
    %23 = weft.transpose %20 perm = [0, 2, 3, 1] : tensor<64x128x32x128xf16> -> tensor<64x32x128x128xf16>
    %24 = weft.transpose %21 perm = [0, 2, 1, 3] : tensor<64x128x32x128xf16> -> tensor<64x32x128x128xf16>
    %25 = weft.matmul %22, %23 : (tensor<64x32x128x128xf16>, tensor<64x32x128x128xf16>) -> tensor<64x32x128x128xf16>
    %26 = weft.constant dense<8.837890e-02> : tensor<1xf16>
    %27 = weft.binary mul %25, %26 : (tensor<64x32x128x128xf16>, tensor<1xf16>) -> tensor<64x32x128x128xf16>
    %28 = weft.weight "attn.mask" from "gpt-layer.onnx.data" offset 402759680 size 32768 checksum "bdbfe81e7c8918a7" : tensor<128x128xf16>
    %29 = weft.binary add %27, %28 : (tensor<64x32x128x128xf16>, tensor<128x128xf16>) -> tensor<64x32x128x128xf16>
    %30 = weft.softmax %29 axis 3 : tensor<64x32x128x128xf16> -> tensor<64x32x128x128xf16>
    %31 = weft.matmul %30, %24 : (tensor<64x32x128x128xf16>, tensor<64x32x128x128xf16>) -> tensor<64x32x128x128xf16>
    %32 = weft.transpose %31 perm = [0, 2, 1, 3] : tensor<64x32x128x128xf16> -> tensor<64x128x32x128xf16>
    %33 = weft.constant dense<[0, 0, 4096]> : tensor<3xi64>
    %34 = weft.reshape %32, %33 : (tensor<64x128x32x128xf16>, tensor<3xi64>) -> tensor<64x128x4096xf16>
    %35 = weft.weight "h0.attn.proj.weight" from "gpt-layer.onnx.data" offset 100704256 size 33554432 checksum "93bde338cdf8d359" : tensor<4096x4096xf16>
    %36 = weft.matmul %34, %35 : (tensor<64x128x4096xf16>, tensor<4096x4096xf16>) -> tensor<64x128x4096xf16>
    %37 = weft.weight "h0.attn.proj.bias" from "gpt-layer.onnx.data" offset 134258688 size 8192 checksum "620797930ab0991a" : tensor<4096xf16>
    %38 = weft.binary add %36, %37 : (tensor<64x128x4096xf16>, tensor<4096xf16>) -> tensor<64x128x4096xf16>
    %39 = weft.binary add %arg0, %38 : (tensor<64x128x4096xf16>, tensor<64x128x4096xf16>) -> tensor<64x128x4096xf16>
    %40 = weft.weight "h0.ln2.scale" from "gpt-layer.onnx.data" offset 134266880 size 8192 checksum "620797930ab0991a" : tensor<4096xf16>
    %41 = weft.weight "h0.ln2.bias" from "gpt-layer.onnx.data" offset 134275072 size 8192 checksum "620797930ab0991a" : tensor<4096xf16>
    %result_0, %mean_1, %inv_std_dev_2 = weft.normalize layer %39, %40, %41 axis 2 epsilon 1.000000e-05 {stash_type = f32} : (tensor<64x128x4096xf16>, tensor<4096xf16>, tensor<4096xf16>) -> (tensor<64x128x4096xf16>, tensor<64x128x1xf32>, tensor<64x128x1xf32>)
    %42 = weft.weight "h0.mlp.fc.weight" from "gpt-layer.onnx.data" offset 134283264 size 134217728 checksum "21aa072e4f28de93" : tensor<4096x16384xf16>
    %43 = weft.matmul %result_0, %42 : (tensor<64x128x4096xf16>, tensor<4096x16384xf16>) -> tensor<64x128x16384xf16>
    %44 = weft.weight "h0.mlp.fc.bias" from "gpt-layer.onnx.data" offset 268500992 size 32768 checksum "bfe2ad64afaf0dd7" : tensor<16384xf16>
    %45 = weft.binary add %43, %44 : (tensor<64x128x16384xf16>, tensor<16384xf16>) -> tensor<64x128x16384xf16>
    %46 = weft.constant dense<1.414060e+00> : tensor<1xf16>
    %47 = weft.binary div %45, %46 : (tensor<64x128x16384xf16>, tensor<1xf16>) -> tensor<64x128x16384xf16>
    %48 = weft.unary erf %47 : tensor<64x128x16384xf16> -> tensor<64x128x16384xf16>
    %49 = weft.constant dense<1.000000e+00> : tensor<1xf16>
    %50 = weft.binary add %48, %49 : (tensor<64x128x16384xf16>, tensor<1xf16>) -> tensor<64x128x16384xf16>
    %51 = weft.binary mul %45, %50 : (tensor<64x128x16384xf16>, tensor<64x128x16384xf16>) -> tensor<64x128x16384xf16>
    %52 = weft.constant dense<5.000000e-01> : tensor<1xf16>
    %53 = weft.binary mul %51, %52 : (tensor<64x128x16384xf16>, tensor<1xf16>) -> tensor<64x128x16384xf16>
    %54 = weft.weight "h0.mlp.proj.weight" from "gpt-layer.onnx.data" offset 268533760 size 134217728 checksum "21aa072e4f28de93" : tensor<16384x4096xf16>
    %55 = weft.matmul %53, %54 : (tensor<64x128x16384xf16>, tensor<16384x4096xf16>) -> tensor<64x128x4096xf16>
    %56 = weft.weight "h0.mlp.proj.bias" from "gpt-layer.onnx.data" offset 402751488 size 8192 checksum "620797930ab0991a" : tensor<4096xf16>
    %57 = weft.binary add %55, %56 : (tensor<64x128x4096xf16>, tensor<4096xf16>) -> tensor<64x128x4096xf16>
    %58 = weft.binary add %39, %57 : (tensor<64x128x4096xf16>, tensor<64x128x4096xf16>) -> tensor<64x128x4096xf16>
    return %58 : tensor<64x128x4096xf16>
  }
}

