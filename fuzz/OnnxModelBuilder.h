//===- OnnxModelBuilder.h - Small ONNX graphs for the fuzz targets -*- C++ -*-===//
//
// The fixed models of the fuzz targets that read weftc's side files
// (--sharding-file, --pipeline-file) are built in C++ with these: float
// initializers of a known pattern, typed graph inputs and outputs, and
// nodes named after their op and output.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_FUZZ_ONNXMODELBUILDER_H
#define WEFT_FUZZ_ONNXMODELBUILDER_H

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace weft::fuzz {

/// An initializer of `dims`: floats 0.25 * (i % 7), or with `isInt64` ones,
/// except that a 2-element INT64 tensor is [2, 8] (a Reshape target).
inline void addTensor(onnx::GraphProto &graph, const std::string &name,
                      std::vector<int64_t> dims, bool isInt64 = false) {
  onnx::TensorProto *tensor = graph.add_initializer();
  tensor->set_name(name);
  int64_t count = 1;
  for (int64_t d : dims) {
    tensor->add_dims(d);
    count *= d;
  }
  if (isInt64) {
    tensor->set_data_type(onnx::TensorProto::INT64);
    for (int64_t i = 0; i < count; ++i)
      tensor->add_int64_data(dims.size() == 1 && count == 2 ? (i ? 8 : 2) : 1);
    return;
  }
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t i = 0; i < count; ++i)
    tensor->add_float_data(0.25f * static_cast<float>(i % 7));
}

inline void
addValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> *list,
         const std::string &name, std::vector<int64_t> dims) {
  onnx::ValueInfoProto *info = list->Add();
  info->set_name(name);
  onnx::TypeProto::Tensor *type = info->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    type->mutable_shape()->add_dim()->set_dim_value(d);
}

inline void addNode(onnx::GraphProto &graph, const std::string &op,
                    std::vector<std::string> inputs,
                    const std::string &output) {
  onnx::NodeProto *node = graph.add_node();
  node->set_op_type(op);
  node->set_name(op + "_" + output);
  for (const std::string &input : inputs)
    node->add_input(input);
  node->add_output(output);
}

} // namespace weft::fuzz

#endif // WEFT_FUZZ_ONNXMODELBUILDER_H
