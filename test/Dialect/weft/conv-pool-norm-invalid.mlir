// RUN: weft-opt %s -split-input-file -verify-diagnostics

// Tests that a convolution needs spatial dimensions.
func.func @conv_rank(%x: tensor<1x3xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+2 {{input must have rank >= 3 (N x C x spatial)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [] pads [] dilations [] : (tensor<1x3xf32>, tensor<4x3xf32>) -> tensor<1x4xf32>
  return
}

// -----

// Tests that the weight has the input's rank.
func.func @conv_weight_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+2 {{weight 'tensor<4x3x3xf32>' must have the input's rank 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that an addend has the result's type.
func.func @conv_addend_type(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %r: tensor<1x4x8x8xf32>) {
  // expected-error @+2 {{addend 'tensor<1x4x8x8xf32>' must have the result's type 'tensor<1x4x6x6xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w addend %r strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that a fused clamp's bounds are ordered.
func.func @conv_clamp_order(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{clamp_min 6.000000e+00 is greater than clamp_max 0.000000e+00}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] clamp_min 6.0 clamp_max 0.0 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that a fused clamp's bounds are finite.
func.func @conv_clamp_inf(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{clamp bounds must be finite}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] clamp_max 0x7FF0000000000000 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that strides need one value per spatial dimension.
func.func @conv_strides_length(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{strides has 1 values, expected 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that pads need two values per spatial dimension.
func.func @conv_pads_length(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{pads has 2 values, expected 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0] dilations [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that dilations are positive.
func.func @conv_dilations(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{dilations value 0 must be >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 0] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that pads are not negative.
func.func @conv_negative_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{pads value -1 must be >= 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, -1, 0, 0] dilations [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that auto_pad excludes explicit pads.
func.func @conv_auto_pad_pads(%x: tensor<1x3x?x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{pads must be zero with auto_pad same_upper}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] auto_pad same_upper : (tensor<1x3x?x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x?x8xf32>
  return
}

// -----

// Tests that group is positive.
func.func @conv_group(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{group 0 must be >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 0 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that group divides the output channels.
func.func @conv_group_outputs(%x: tensor<1x6x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{weight's 4 output channels are not divisible by group 3}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 3 : (tensor<1x6x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that input channels equal group times the weight's channels.
func.func @conv_channels(%x: tensor<1x5x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{input has 5 channels but weight expects 2 per group times group 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 2 : (tensor<1x5x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that the bias has one value per output channel.
func.func @conv_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{bias 'tensor<3xf32>' must have shape (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w, %b strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that the weight shares the input's element type.
func.func @conv_element_type(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) {
  // expected-error @+2 {{weight element type 'f16' differs from input element type 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Tests that a dilated kernel larger than the padded input is rejected.
func.func @conv_kernel_too_large(%x: tensor<1x3x4x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{window of size 5 (kernel 3, dilation 2) is larger than the padded input size 4 in spatial dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [2, 1] : (tensor<1x3x4x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x6xf32>
  return
}

// -----

// Tests that convolution is for floats only.
func.func @conv_integer(%x: tensor<1x3x8x8xi32>, %w: tensor<4x3x3x3xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x3x8x8xi32>, tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32>
  return
}

// -----

// Tests that the kernel length fixes the input rank.
func.func @pool_rank(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+2 {{input 'tensor<1x3x8x8xf32>' must have rank 3 for a kernel_shape of 1 values}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool max %x kernel_shape [2] strides [1] pads [0, 0] dilations [1] : tensor<1x3x8x8xf32> -> tensor<1x3x7xf32>
  return
}

// -----

// Tests that kernel sizes are positive.
func.func @pool_kernel(%x: tensor<1x3x8xf32>) {
  // expected-error @+2 {{kernel_shape value 0 must be >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool max %x kernel_shape [0] strides [1] pads [0, 0] dilations [1] : tensor<1x3x8xf32> -> tensor<1x3x9xf32>
  return
}

// -----

// Tests that the kernel is not empty.
func.func @pool_empty_kernel(%x: tensor<1x3xf32>) {
  // expected-error @+2 {{kernel_shape must not be empty}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool max %x kernel_shape [] strides [] pads [] dilations [] : tensor<1x3xf32> -> tensor<1x3xf32>
  return
}

// -----

// Tests that only max pooling gives indices.
func.func @pool_average_indices(%x: tensor<1x3x8xf32>) {
  // expected-error @+2 {{with_indices is only for max pooling}}
  // expected-error @+1 {{failed to infer returned types}}
  %0, %1 = weft.pool average %x kernel_shape [2] strides [2] pads [0, 0] dilations [1] with_indices : tensor<1x3x8xf32> -> tensor<1x3x4xf32>, tensor<1x3x4xi64>
  return
}

// -----

// Tests that column_major orders indices, which need with_indices.
func.func @pool_column_major(%x: tensor<1x3x8xf32>) {
  // expected-error @+2 {{column_major needs with_indices}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool max %x kernel_shape [2] strides [2] pads [0, 0] dilations [1] column_major : tensor<1x3x8xf32> -> tensor<1x3x4xf32>
  return
}

// -----

// Tests that with_indices and the Indices result come together.
func.func @pool_indices_result(%x: tensor<1x3x8xf32>) {
  // expected-error @+2 {{'weft.pool' op inferred type(s) 'tensor<1x3x4xf32>', 'tensor<1x3x4xi64>' are incompatible with return type(s) of operation 'tensor<1x3x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool max %x kernel_shape [2] strides [2] pads [0, 0] dilations [1] with_indices : tensor<1x3x8xf32> -> tensor<1x3x4xf32>
  return
}

// -----

// Tests that average pooling needs floats.
func.func @pool_average_integer(%x: tensor<1x3x8xi8>) {
  // expected-error @+2 {{average pooling needs a float element type, got 'i8'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool average %x kernel_shape [2] strides [1] pads [0, 0] dilations [1] : tensor<1x3x8xi8> -> tensor<1x3x7xi8>
  return
}

// -----

// Tests that count_include_pad is only for average pooling.
func.func @pool_count_include_pad(%x: tensor<1x3x8xf32>) {
  // expected-error @+2 {{count_include_pad is only for average pooling}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool max %x kernel_shape [2] strides [1] pads [0, 0] dilations [1] count_include_pad : tensor<1x3x8xf32> -> tensor<1x3x7xf32>
  return
}

// -----

// Tests that the window must fit in the padded input.
func.func @pool_window(%x: tensor<1x3x2xf32>) {
  // expected-error @+2 {{window of size 4 (kernel 4, dilation 1) is larger than the padded input size 3 in spatial dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool max %x kernel_shape [4] strides [1] pads [1, 0] dilations [1] : tensor<1x3x2xf32> -> tensor<1x3x1xf32>
  return
}

// -----

// Tests that pool strides are positive.
func.func @pool_strides(%x: tensor<1x3x8xf32>) {
  // expected-error @+2 {{strides value 0 must be >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool max %x kernel_shape [2] strides [0] pads [0, 0] dilations [1] : tensor<1x3x8xf32> -> tensor<1x3x7xf32>
  return
}

// -----

// Tests that batch normalization needs a channel dimension.
func.func @batch_norm_rank(%x: tensor<4xf32>, %p: tensor<4xf32>) {
  // expected-error @+2 {{input must have rank >= 2 (N x C x ...)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.batch_norm %x, %p, %p, %p, %p epsilon 1.0e-05 : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Tests that per-channel parameters match the channel count.
func.func @batch_norm_channels(%x: tensor<2x4x8xf32>, %p: tensor<4xf32>, %q: tensor<3xf32>) {
  // expected-error @+2 {{mean 'tensor<3xf32>' must have shape (4) for input 'tensor<2x4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.batch_norm %x, %p, %p, %q, %p epsilon 1.0e-05 : (tensor<2x4x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// Tests that parameters are all per channel or all per element.
func.func @batch_norm_mixed(%x: tensor<2x4x8xf32>, %p: tensor<4x8xf32>, %q: tensor<4xf32>) {
  // expected-error @+2 {{bias 'tensor<4xf32>' must have shape (4x8) like the input without dimension 0 for input 'tensor<2x4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.batch_norm %x, %p, %q, %p, %p epsilon 1.0e-05 : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return
}

// -----

// Tests that mean and var share an element type.
func.func @batch_norm_stats_type(%x: tensor<2x4xf32>, %p: tensor<4xf32>, %q: tensor<4xf16>) {
  // expected-error @+2 {{mean element type 'f32' differs from var element type 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.batch_norm %x, %p, %p, %p, %q epsilon 1.0e-05 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>) -> tensor<2x4xf32>
  return
}

// -----

// Tests that the normalized axis is in range.
func.func @normalize_axis(%x: tensor<2x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+2 {{axis 2 is out of range for input 'tensor<2x4xf32>' (expected [0, 2))}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = weft.normalize layer %x, %s axis 2 epsilon 1.0e-05 : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  return
}

// -----

// Tests that layer parameters broadcast to the input.
func.func @normalize_layer_scale(%x: tensor<2x4xf32>, %s: tensor<3xf32>) {
  // expected-error @+2 {{scale 'tensor<3xf32>' does not broadcast to the input's shape 2x4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = weft.normalize layer %x, %s axis 1 epsilon 1.0e-05 : (tensor<2x4xf32>, tensor<3xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return
}

// -----

// Tests that instance normalization normalizes from axis 2.
func.func @normalize_instance_axis(%x: tensor<2x4x5xf32>, %s: tensor<4xf32>) {
  // expected-error @+2 {{instance normalization needs an input of rank >= 3 and axis 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = weft.normalize instance %x, %s, %s axis 1 epsilon 1.0e-05 : (tensor<2x4x5xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x5xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return
}

// -----

// Tests that instance parameters have one value per channel.
func.func @normalize_instance_scale(%x: tensor<2x4x5xf32>, %s: tensor<4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{bias 'tensor<4x5xf32>' must have shape (4), one value per channel}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = weft.normalize instance %x, %s, %b axis 2 epsilon 1.0e-05 : (tensor<2x4x5xf32>, tensor<4xf32>, tensor<4x5xf32>) -> (tensor<2x4x5xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  return
}

// -----

// Tests that the scale has the input's element type.
func.func @normalize_scale_type(%x: tensor<2x4xf16>, %s: tensor<4xf32>) {
  // expected-error @+2 {{scale element type 'f32' differs from input element type 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = weft.normalize layer %x, %s axis 1 epsilon 1.0e-05 : (tensor<2x4xf16>, tensor<4xf32>) -> (tensor<2x4xf16>, tensor<2x1xf16>, tensor<2x1xf16>)
  return
}

// -----

// Tests that the statistics have the stash type.
func.func @normalize_stash_type(%x: tensor<2x4xf16>, %s: tensor<4xf16>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4xf16>', 'tensor<2x1xf32>', 'tensor<2x1xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = weft.normalize layer %x, %s axis 1 epsilon 1.0e-05 {stash_type = f32} : (tensor<2x4xf16>, tensor<4xf16>) -> (tensor<2x4xf16>, tensor<2x1xf16>, tensor<2x1xf16>)
  return
}

// -----

// Tests that an empty kernel dimension is rejected.
func.func @conv_empty_kernel(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x0x3xf32>) {
  // expected-error @+2 {{kernel size 0 in spatial dimension 0 must be >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] : (tensor<1x3x8x8xf32>, tensor<4x3x0x3xf32>) -> tensor<1x4x9x6xf32>
  return
}

// -----

// Tests that window sizes that overflow are rejected.
func.func @pool_overflow(%x: tensor<1x3x8xf32>) {
  // expected-error @+2 {{window or padded input size overflows in spatial dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool max %x kernel_shape [3] strides [1] pads [0, 0] dilations [9223372036854775807] : tensor<1x3x8xf32> -> tensor<1x3x1xf32>
  return
}

// -----

// Tests that a channels-last input's channels are its last dimension: 9
// channels here, where the weight expects 8.
func.func @conv_channels_last_input(%x: tensor<1x8x9x9xf32>, %w: tensor<4x8x1x1xf32>) {
  // expected-error @+2 {{input has 9 channels but weight expects 8 per group times group 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_input : (tensor<1x8x9x9xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x9x8xf32>
  return
}

// -----

// Tests that a channels-last result's type is N x H x W x M.
func.func @conv_channels_last_result(%x: tensor<1x8x9x9xf32>, %w: tensor<4x8x1x1xf32>) {
  // expected-error @+2 {{'weft.conv' op inferred type(s) 'tensor<1x9x9x4xf32>' are incompatible with return type(s) of operation 'tensor<1x4x9x9xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_result : (tensor<1x8x9x9xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x9x9xf32>
  return
}

// -----

// Tests that the addend has the layout of the result.
func.func @conv_channels_last_addend(%x: tensor<1x8x9x9xf32>, %w: tensor<4x8x1x1xf32>, %a: tensor<1x4x9x9xf32>) {
  // expected-error @+2 {{addend 'tensor<1x4x9x9xf32>' must have the result's type 'tensor<1x9x9x4xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w addend %a strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_result : (tensor<1x8x9x9xf32>, tensor<4x8x1x1xf32>, tensor<1x4x9x9xf32>) -> tensor<1x9x9x4xf32>
  return
}

// -----

// Tests that a kernel-first weight is K x K x C/group x M: read as such,
// 3x3x8x4 is a 3x3 kernel over 8 channels, which a 4-channel input lacks.
func.func @conv_kernel_first(%x: tensor<1x4x9x9xf32>, %w: tensor<3x3x8x4xf32>) {
  // expected-error @+2 {{input has 4 channels but weight expects 8 per group times group 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] kernel_first_weight : (tensor<1x4x9x9xf32>, tensor<3x3x8x4xf32>) -> tensor<1x4x7x7xf32>
  return
}

// -----

// Tests that a blocked input ends in 16 channels.
func.func @conv_blocked_input_block(%x: tensor<1x4x8x8x8xf32>, %w: tensor<32x32x3x3xf32>) {
  // expected-error @+2 {{blocked input 'tensor<1x4x8x8x8xf32>' must end in a dimension of 16}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] blocked_input : (tensor<1x4x8x8x8xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x8x8xf32>
  return
}

// -----

// Tests that a blocked result's output channels are a multiple of 16.
func.func @conv_blocked_result_channels(%x: tensor<1x32x8x8xf32>, %w: tensor<24x32x3x3xf32>) {
  // expected-error @+2 {{a blocked result or addend needs output channels that are a multiple of 16, got 24}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] blocked_result : (tensor<1x32x8x8xf32>, tensor<24x32x3x3xf32>) -> tensor<1x1x8x8x16xf32>
  return
}

// -----

// Tests that the blocked layouts exclude the channels-last ones.
func.func @conv_blocked_and_channels_last(%x: tensor<1x32x8x8xf32>, %w: tensor<32x32x1x1xf32>) {
  // expected-error @+2 {{channel-blocked layouts exclude the channels-last and kernel-first ones}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_input blocked_result : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x2x8x8x16xf32>
  return
}

// -----

// Tests that the blocked layouts need group 1.
func.func @conv_blocked_group(%x: tensor<1x2x8x8x16xf32>, %w: tensor<32x16x3x3xf32>) {
  // expected-error @+2 {{channel-blocked layouts need group 1, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 2 blocked_input : (tensor<1x2x8x8x16xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x8x8xf32>
  return
}

// -----

// Tests that a blocked addend has the result's blocked shape, whatever the
// result's layout.
func.func @conv_blocked_addend(%x: tensor<1x32x8x8xf32>, %w: tensor<32x32x3x3xf32>, %a: tensor<1x32x8x8xf32>) {
  // expected-error @+2 {{addend 'tensor<1x32x8x8xf32>' must have the result's channel-blocked type 'tensor<1x2x8x8x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w addend %a strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] blocked_addend : (tensor<1x32x8x8xf32>, tensor<32x32x3x3xf32>, tensor<1x32x8x8xf32>) -> tensor<1x32x8x8xf32>
  return
}

// -----

// Tests that a blocked pool's input ends in 16 channels.
func.func @pool_blocked(%x: tensor<1x2x8x8x8xf32>) {
  // expected-error @+2 {{a blocked pool's input ends in a dimension of 16 and it has no indices, got 'tensor<1x2x8x8x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.pool max %x kernel_shape [2, 2] strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] blocked : tensor<1x2x8x8x8xf32> -> tensor<1x2x4x4x8xf32>
  return
}

// -----

// Tests that a packed weight needs channels-last input and result.
func.func @conv_packed_weight_layouts(%x: tensor<1x7x7x64xf32>, %w: tensor<1x64x32xf32>) {
  // expected-error @+2 {{packed_weight needs channels_last_input and channels_last_result}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_input packed_weight : (tensor<1x7x7x64xf32>, tensor<1x64x32xf32>) -> tensor<1x32x7x7xf32>
  return
}

// -----

// Tests that a packed weight excludes a kernel-first one.
func.func @conv_packed_and_kernel_first(%x: tensor<1x7x7x64xf32>, %w: tensor<1x64x32xf32>) {
  // expected-error @+2 {{packed_weight excludes kernel_first_weight and the channel-blocked layouts}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_input channels_last_result kernel_first_weight packed_weight : (tensor<1x7x7x64xf32>, tensor<1x64x32xf32>) -> tensor<1x7x7x32xf32>
  return
}

// -----

// Tests that a packed weight's panels are 32 output channels wide.
func.func @conv_packed_weight_shape(%x: tensor<1x7x7x64xf32>, %w: tensor<2x64x16xf32>) {
  // expected-error @+2 {{a packed weight must be M/32 x C x 32, got 'tensor<2x64x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] channels_last_input channels_last_result packed_weight : (tensor<1x7x7x64xf32>, tensor<2x64x16xf32>) -> tensor<1x7x7x32xf32>
  return
}

// -----

// Tests that a packed weight is for 2-D convolutions.
func.func @conv_packed_weight_rank(%x: tensor<1x7x64xf32>, %w: tensor<1x64x32xf32>) {
  // expected-error @+2 {{packed_weight is for 2-D convolutions, got input 'tensor<1x7x64xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [1] pads [0, 0] dilations [1] channels_last_input channels_last_result packed_weight : (tensor<1x7x64xf32>, tensor<1x64x32xf32>) -> tensor<1x7x32xf32>
  return
}

// -----

// Tests that a packed weight needs stride 1 (and group 1, no pads).
func.func @conv_packed_weight_stride(%x: tensor<1x8x8x64xf32>, %w: tensor<1x64x32xf32>) {
  // expected-error @+2 {{packed_weight needs group 1, strides 1 and no pads}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w strides [2, 2] pads [0, 0, 0, 0] dilations [1, 1] channels_last_input channels_last_result packed_weight : (tensor<1x8x8x64xf32>, tensor<1x64x32xf32>) -> tensor<1x4x4x32xf32>
  return
}
