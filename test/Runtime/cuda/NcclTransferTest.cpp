//===- NcclTransferTest.cpp - SEND and RECV's stream protocol, no GPU -----===//
//
// The transfer stream's protocol (NcclTransfer.h) and the SEND ops' staging
// (SendStaging.h) against stand-ins for CUDA and NCCL. The stand-in for the
// streams builds the happens-before graph that CUDA would enforce (stream
// order, and a wait on an event ordered after the event's latest record at
// the time of the wait), so the tests check what the protocol promises: a
// send reads data written before it and is not waited for by the compute
// that follows; an op's staging buffer is not overwritten before its last
// send; a receive waits for the kernels before it and the kernels after it
// wait for the receive. Also which stream transfers choose.
//
//===----------------------------------------------------------------------===//

#include "cuda/NcclTransfer.h"
#include "cuda/SendStaging.h"

#include "CudaTestSupport.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace weft::rt::cuda;
using namespace weft::rt::cuda::test;

namespace {

template <typename T> T handle(uintptr_t n) { return reinterpret_cast<T>(n); }

//===----------------------------------------------------------------------===//
// SendStaging against a fake allocator
//===----------------------------------------------------------------------===//

/// What the fake CUDA runtime did, in order ("malloc 64", "free 0x1000",
/// "event 1", "destroy 1", "sync 1"), and what it is told to fail.
struct FakeCuda {
  std::vector<std::string> calls;
  uintptr_t nextBuffer = 0x1000;
  uintptr_t nextEvent = 1;
  std::set<void *> live;
  cudaError_t mallocResult = cudaSuccess;
  cudaError_t eventResult = cudaSuccess;
};
FakeCuda *fakeCuda = nullptr;

std::string hex(const void *p) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", p);
  return text;
}

cudaError_t fakeAllocate(void **ptr, size_t bytes) {
  fakeCuda->calls.push_back("malloc " + std::to_string(bytes));
  if (fakeCuda->mallocResult != cudaSuccess)
    return fakeCuda->mallocResult;
  *ptr = handle<void *>(fakeCuda->nextBuffer);
  fakeCuda->nextBuffer += 0x1000;
  fakeCuda->live.insert(*ptr);
  return cudaSuccess;
}
cudaError_t fakeFree(void *ptr) {
  fakeCuda->calls.push_back("free " + hex(ptr));
  fakeCuda->live.erase(ptr);
  return cudaSuccess;
}
cudaError_t fakeCreateEvent(cudaEvent_t *event) {
  fakeCuda->calls.push_back("event");
  if (fakeCuda->eventResult != cudaSuccess)
    return fakeCuda->eventResult;
  *event = handle<cudaEvent_t>(fakeCuda->nextEvent++);
  fakeCuda->live.insert(*event);
  return cudaSuccess;
}
cudaError_t fakeDestroyEvent(cudaEvent_t event) {
  fakeCuda->calls.push_back("destroy " + hex(event));
  fakeCuda->live.erase(event);
  return cudaSuccess;
}
cudaError_t fakeSynchronizeEvent(cudaEvent_t event) {
  fakeCuda->calls.push_back("sync " + hex(event));
  return cudaSuccess;
}

class SendStagingTest : public ::testing::Test {
protected:
  void SetUp() override {
    fakeCuda = &cuda;
    ctx = makeContext();
    ASSERT_TRUE(ctx);
  }
  void TearDown() override { fakeCuda = nullptr; }
  StagingApi api() {
    return {fakeAllocate, fakeFree, fakeCreateEvent, fakeDestroyEvent,
            fakeSynchronizeEvent};
  }
  std::string error() { return weft_rt_context_error(ctx.get()); }

  FakeCuda cuda;
  ContextPtr ctx;
  // Two ops' parameter blocks: only their addresses matter.
  int64_t op1[6] = {}, op2[6] = {};
};

TEST_F(SendStagingTest, AnOpKeepsItsBufferFromCallToCall) {
  SendStaging staging(api());
  SendSlot *first = nullptr, *again = nullptr, *smaller = nullptr;
  ASSERT_EQ(staging.slotFor(ctx.get(), op1, 64, &first), WEFT_RT_OK) << error();
  ASSERT_NE(first->buffer, nullptr);
  EXPECT_EQ(first->bytes, 64u);
  EXPECT_NE(first->sentEvent, nullptr);
  EXPECT_FALSE(first->sent);
  first->sent = true;
  ASSERT_EQ(staging.slotFor(ctx.get(), op1, 64, &again), WEFT_RT_OK);
  ASSERT_EQ(staging.slotFor(ctx.get(), op1, 16, &smaller), WEFT_RT_OK);
  EXPECT_EQ(again, first);
  EXPECT_EQ(smaller, first);
  // The "sent" mark survives: the next copy into it must wait.
  EXPECT_TRUE(first->sent);
  EXPECT_EQ(cuda.calls, (std::vector<std::string>{"malloc 64", "event"}));
  EXPECT_EQ(staging.size(), 1u);
}

TEST_F(SendStagingTest, EveryOpHasItsOwnBuffer) {
  SendStaging staging(api());
  SendSlot *a = nullptr, *b = nullptr;
  ASSERT_EQ(staging.slotFor(ctx.get(), op1, 64, &a), WEFT_RT_OK);
  ASSERT_EQ(staging.slotFor(ctx.get(), op2, 100, &b), WEFT_RT_OK);
  EXPECT_NE(a->buffer, b->buffer);
  EXPECT_NE(a->sentEvent, b->sentEvent);
  EXPECT_EQ(staging.size(), 2u);
  EXPECT_EQ(staging.bytesHeld(), 164u);
}

TEST_F(SendStagingTest, GrowingWaitsForTheLastSendBeforeFreeing) {
  SendStaging staging(api());
  SendSlot *slot = nullptr;
  ASSERT_EQ(staging.slotFor(ctx.get(), op1, 64, &slot), WEFT_RT_OK);
  void *oldBuffer = slot->buffer;
  cudaEvent_t oldEvent = slot->sentEvent;
  slot->sent = true;
  cuda.calls.clear();
  ASSERT_EQ(staging.slotFor(ctx.get(), op1, 128, &slot), WEFT_RT_OK) << error();
  EXPECT_EQ(cuda.calls, (std::vector<std::string>{"sync " + hex(oldEvent),
                                                  "free " + hex(oldBuffer),
                                                  "destroy " + hex(oldEvent),
                                                  "malloc 128", "event"}));
  EXPECT_EQ(slot->bytes, 128u);
  EXPECT_FALSE(slot->sent);
  EXPECT_EQ(staging.size(), 1u);
  EXPECT_EQ(staging.bytesHeld(), 128u);
}

TEST_F(SendStagingTest, GrowingAnUnsentSlotDoesNotWait) {
  SendStaging staging(api());
  SendSlot *slot = nullptr;
  ASSERT_EQ(staging.slotFor(ctx.get(), op1, 8, &slot), WEFT_RT_OK);
  cuda.calls.clear();
  ASSERT_EQ(staging.slotFor(ctx.get(), op1, 9, &slot), WEFT_RT_OK);
  for (const std::string &call : cuda.calls)
    EXPECT_NE(call.rfind("sync", 0), 0u) << call;
}

TEST_F(SendStagingTest, AFailedAllocationLeavesNoSlotAndCanBeRetried) {
  SendStaging staging(api());
  SendSlot *slot = nullptr;
  cuda.mallocResult = cudaErrorMemoryAllocation;
  EXPECT_EQ(staging.slotFor(ctx.get(), op1, 4096, &slot),
            WEFT_RT_OUT_OF_MEMORY);
  EXPECT_NE(error().find("cudaMalloc failed for the 4096 bytes"),
            std::string::npos)
      << error();
  EXPECT_EQ(staging.size(), 0u);
  EXPECT_TRUE(cuda.live.empty());
  cuda.mallocResult = cudaSuccess;
  ASSERT_EQ(staging.slotFor(ctx.get(), op1, 4096, &slot), WEFT_RT_OK);
  EXPECT_EQ(staging.size(), 1u);
}

TEST_F(SendStagingTest, AFailedEventFreesTheBuffer) {
  SendStaging staging(api());
  SendSlot *slot = nullptr;
  cuda.eventResult = cudaErrorInvalidValue;
  EXPECT_EQ(staging.slotFor(ctx.get(), op1, 32, &slot), WEFT_RT_INTERNAL);
  EXPECT_NE(error().find("cudaEventCreateWithFlags"), std::string::npos)
      << error();
  EXPECT_EQ(staging.size(), 0u);
  EXPECT_TRUE(cuda.live.empty());
}

TEST_F(SendStagingTest, AFailedGrowthLeavesNoSlot) {
  SendStaging staging(api());
  SendSlot *slot = nullptr;
  ASSERT_EQ(staging.slotFor(ctx.get(), op1, 32, &slot), WEFT_RT_OK);
  cuda.mallocResult = cudaErrorMemoryAllocation;
  EXPECT_EQ(staging.slotFor(ctx.get(), op1, 64, &slot), WEFT_RT_OUT_OF_MEMORY);
  EXPECT_EQ(staging.size(), 0u);
  EXPECT_TRUE(cuda.live.empty());
}

TEST_F(SendStagingTest, DestructionFreesEverything) {
  {
    SendStaging staging(api());
    SendSlot *slot = nullptr;
    ASSERT_EQ(staging.slotFor(ctx.get(), op1, 32, &slot), WEFT_RT_OK);
    ASSERT_EQ(staging.slotFor(ctx.get(), op2, 48, &slot), WEFT_RT_OK);
    EXPECT_EQ(cuda.live.size(), 4u);
  }
  EXPECT_TRUE(cuda.live.empty());
}

TEST_F(SendStagingTest, EmptySendsAreTheCallersBug) {
  SendStaging staging(api());
  SendSlot *slot = nullptr;
  EXPECT_EQ(staging.slotFor(ctx.get(), op1, 0, &slot), WEFT_RT_INTERNAL);
  EXPECT_EQ(staging.slotFor(ctx.get(), nullptr, 8, &slot), WEFT_RT_INTERNAL);
  EXPECT_TRUE(cuda.calls.empty());
}

//===----------------------------------------------------------------------===//
// The protocol against a model of streams and events
//===----------------------------------------------------------------------===//

/// Streams as CUDA orders them: every queued operation is a node that
/// follows the stream's previous one; a record makes the event stand for
/// the stream's last node; a wait makes the stream's next node follow the
/// node the event stands for at the time of the wait.
struct StreamModel {
  struct Node {
    std::string what;
    cudaStream_t stream;
    std::vector<int> after;
    const void *reads = nullptr;
    const void *writes = nullptr;
  };
  std::vector<Node> nodes;
  std::map<cudaStream_t, int> last;
  std::map<cudaEvent_t, int> recorded;
  bool inGroup = false;
  int groups = 0;
  /// NCCL calls, in issue order.
  std::vector<int> ncclOps;
  ncclResult_t sendResult = ncclSuccess;
  ncclResult_t groupEndResult = ncclSuccess;
  cudaError_t copyResult = cudaSuccess;
  int groupEndCalls = 0;

  int add(const std::string &what, cudaStream_t stream,
          const void *reads = nullptr, const void *writes = nullptr) {
    Node node{what, stream, {}, reads, writes};
    if (last.count(stream))
      node.after.push_back(last[stream]);
    nodes.push_back(node);
    return last[stream] = static_cast<int>(nodes.size()) - 1;
  }
  /// Whether node a is ordered before node b.
  bool before(int a, int b) const {
    std::vector<int> todo = {b};
    std::set<int> seen;
    while (!todo.empty()) {
      int n = todo.back();
      todo.pop_back();
      for (int p : nodes[n].after) {
        if (p == a)
          return true;
        if (seen.insert(p).second)
          todo.push_back(p);
      }
    }
    return false;
  }
  int find(const std::string &what, int nth = 0) const {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].what == what && nth-- == 0)
        return static_cast<int>(i);
    return -1;
  }
};
StreamModel *model = nullptr;

cudaError_t modelCopy(void *dst, const void *src, size_t, cudaStream_t s) {
  if (model->copyResult != cudaSuccess)
    return model->copyResult;
  model->add("copy", s, src, dst);
  return cudaSuccess;
}
cudaError_t modelRecord(cudaEvent_t event, cudaStream_t s) {
  if (model->last.count(s))
    model->recorded[event] = model->last[s];
  return cudaSuccess;
}
cudaError_t modelWait(cudaStream_t s, cudaEvent_t event) {
  int node = model->add("wait", s);
  if (model->recorded.count(event))
    model->nodes[node].after.push_back(model->recorded[event]);
  return cudaSuccess;
}
ncclResult_t modelGroupStart() {
  model->inGroup = true;
  ++model->groups;
  return ncclSuccess;
}
ncclResult_t modelGroupEnd() {
  ++model->groupEndCalls;
  model->inGroup = false;
  return model->groupEndResult;
}
ncclResult_t modelSend(const void *buffer, size_t, int peer, ncclComm_t,
                       cudaStream_t s) {
  if (model->sendResult != ncclSuccess)
    return model->sendResult;
  EXPECT_TRUE(model->inGroup) << "ncclSend outside a group";
  model->ncclOps.push_back(
      model->add("send to " + std::to_string(peer), s, buffer, nullptr));
  return ncclSuccess;
}
ncclResult_t modelRecv(void *buffer, size_t, int peer, ncclComm_t,
                       cudaStream_t s) {
  EXPECT_TRUE(model->inGroup) << "ncclRecv outside a group";
  model->ncclOps.push_back(
      model->add("recv from " + std::to_string(peer), s, nullptr, buffer));
  return ncclSuccess;
}

class TransferProtocolTest : public ::testing::Test {
protected:
  void SetUp() override {
    model = &streams;
    fakeCuda = &cuda;
    ctx = makeContext();
    ASSERT_TRUE(ctx);
    lane.compute = handle<cudaStream_t>(1);
    lane.transfer = handle<cudaStream_t>(2);
    lane.handoff = handle<cudaEvent_t>(101);
    lane.arrived = handle<cudaEvent_t>(102);
    lane.comm = handle<ncclComm_t>(7);
  }
  void TearDown() override {
    // The staging frees its buffers through the fake.
    staging.reset();
    model = nullptr;
    fakeCuda = nullptr;
  }
  TransferApi api() {
    return {modelCopy,     modelRecord, modelWait, modelGroupStart,
            modelGroupEnd, modelSend,   modelRecv};
  }
  /// A kernel on the compute stream that reads and writes `buffer`.
  int kernel(const std::string &name, const void *buffer) {
    return streams.add(name, lane.compute, buffer, buffer);
  }
  SendSlot *slotOf(const int64_t *op, size_t bytes) {
    SendSlot *slot = nullptr;
    EXPECT_EQ(staging->slotFor(ctx.get(), op, bytes, &slot), WEFT_RT_OK);
    return slot;
  }
  weft_rt_status send(SendSlot *slot, const void *in, int peer) {
    bool failed = false;
    weft_rt_status status =
        stagedSend(ctx.get(), api(), lane, *slot, in, 64, peer, &failed);
    ncclFailed = ncclFailed || failed;
    return status;
  }
  weft_rt_status recv(void *out, int peer) {
    bool failed = false;
    weft_rt_status status =
        orderedRecv(ctx.get(), api(), lane, out, 64, peer, &failed);
    ncclFailed = ncclFailed || failed;
    return status;
  }

  StreamModel streams;
  FakeCuda cuda;
  ContextPtr ctx;
  TransferLane lane;
  std::unique_ptr<SendStaging> staging = std::make_unique<SendStaging>(
      StagingApi{fakeAllocate, fakeFree, fakeCreateEvent, fakeDestroyEvent,
                 fakeSynchronizeEvent});
  bool ncclFailed = false;
  int64_t op1[6] = {}, op2[6] = {};
  char arena[256] = {};
};

TEST_F(TransferProtocolTest, ASendOverlapsTheComputeAfterIt) {
  void *x = arena;
  int produce = kernel("produce x", x);
  SendSlot *slot = slotOf(op1, 64);
  ASSERT_EQ(send(slot, x, 1), WEFT_RT_OK) << weft_rt_context_error(ctx.get());
  int overwrite = kernel("overwrite x", x);

  int copy = streams.find("copy");
  int sent = streams.find("send to 1");
  ASSERT_GE(copy, 0);
  ASSERT_GE(sent, 0);
  EXPECT_EQ(streams.nodes[copy].stream, lane.compute);
  EXPECT_EQ(streams.nodes[copy].reads, x);
  EXPECT_EQ(streams.nodes[copy].writes, slot->buffer);
  // The send reads the staging buffer, on the transfer stream, after the
  // copy that filled it (and so after the kernel that produced x).
  EXPECT_EQ(streams.nodes[sent].stream, lane.transfer);
  EXPECT_EQ(streams.nodes[sent].reads, slot->buffer);
  EXPECT_TRUE(streams.before(produce, copy));
  EXPECT_TRUE(streams.before(copy, sent));
  // The overwrite does not wait for the network, and cannot change what is
  // sent: it comes after the copy.
  EXPECT_FALSE(streams.before(sent, overwrite));
  EXPECT_TRUE(streams.before(copy, overwrite));
  EXPECT_TRUE(slot->sent);
  EXPECT_EQ(streams.groups, 1);
  EXPECT_FALSE(streams.inGroup);
}

TEST_F(TransferProtocolTest, AnOpsStagingIsNotOverwrittenBeforeItsLastSend) {
  void *x = arena;
  SendSlot *slot = slotOf(op1, 64);
  ASSERT_EQ(send(slot, x, 1), WEFT_RT_OK);
  int between = kernel("between", x);
  ASSERT_EQ(send(slotOf(op1, 64), x, 1), WEFT_RT_OK);
  int firstSend = streams.find("send to 1", 0);
  int secondCopy = streams.find("copy", 1);
  ASSERT_GE(secondCopy, 0);
  EXPECT_EQ(streams.nodes[secondCopy].writes, slot->buffer);
  EXPECT_TRUE(streams.before(firstSend, secondCopy));
  // Only the copy waits: the kernel before it runs during the send.
  EXPECT_FALSE(streams.before(firstSend, between));
}

TEST_F(TransferProtocolTest, ADifferentOpDoesNotWaitForAnothersSend) {
  void *x = arena;
  ASSERT_EQ(send(slotOf(op1, 64), x, 1), WEFT_RT_OK);
  ASSERT_EQ(send(slotOf(op2, 64), arena + 128, 2), WEFT_RT_OK);
  int firstSend = streams.find("send to 1");
  int secondCopy = streams.find("copy", 1);
  EXPECT_FALSE(streams.before(firstSend, secondCopy));
}

TEST_F(TransferProtocolTest, AReceiveIsOrderedWithTheComputeAroundIt) {
  void *out = arena + 64;
  int earlier = kernel("read out before", out);
  ASSERT_EQ(recv(out, 3), WEFT_RT_OK) << weft_rt_context_error(ctx.get());
  int later = kernel("read out after", out);
  int received = streams.find("recv from 3");
  ASSERT_GE(received, 0);
  EXPECT_EQ(streams.nodes[received].stream, lane.transfer);
  EXPECT_EQ(streams.nodes[received].writes, out);
  EXPECT_TRUE(streams.before(earlier, received));
  EXPECT_TRUE(streams.before(received, later));
}

TEST_F(TransferProtocolTest, TransfersKeepProgramOrder) {
  void *x = arena, *out = arena + 64;
  ASSERT_EQ(send(slotOf(op1, 64), x, 1), WEFT_RT_OK);
  int middle = kernel("middle", out);
  ASSERT_EQ(recv(out, 1), WEFT_RT_OK);
  ASSERT_EQ(send(slotOf(op2, 64), out, 2), WEFT_RT_OK);
  ASSERT_EQ(streams.ncclOps.size(), 3u);
  EXPECT_EQ(streams.nodes[streams.ncclOps[0]].what, "send to 1");
  EXPECT_EQ(streams.nodes[streams.ncclOps[1]].what, "recv from 1");
  EXPECT_EQ(streams.nodes[streams.ncclOps[2]].what, "send to 2");
  EXPECT_TRUE(streams.before(streams.ncclOps[0], streams.ncclOps[1]));
  EXPECT_TRUE(streams.before(streams.ncclOps[1], streams.ncclOps[2]));
  // The handoff event serves every transfer: the receive waits for the
  // kernel between the two transfers, not only for the send's copy.
  EXPECT_TRUE(streams.before(middle, streams.ncclOps[1]));
  // The second send forwards what was received: its copy waits for it.
  EXPECT_TRUE(streams.before(streams.ncclOps[1], streams.find("copy", 1)));
  EXPECT_EQ(streams.groups, 3);
}

TEST_F(TransferProtocolTest, AFailedSendEndsTheGroupAndMarksNccl) {
  streams.sendResult = ncclRemoteError;
  SendSlot *slot = slotOf(op1, 64);
  EXPECT_EQ(send(slot, arena, 1), WEFT_RT_COMM_ERROR);
  EXPECT_TRUE(ncclFailed);
  EXPECT_EQ(streams.groupEndCalls, 1);
  EXPECT_FALSE(streams.inGroup);
  EXPECT_FALSE(slot->sent);
  EXPECT_NE(std::string(weft_rt_context_error(ctx.get())).find("api.send"),
            std::string::npos)
      << weft_rt_context_error(ctx.get());
}

TEST_F(TransferProtocolTest, AFailedGroupEndIsNotEndedTwice) {
  streams.groupEndResult = ncclInternalError;
  EXPECT_EQ(recv(arena, 1), WEFT_RT_COMM_ERROR);
  EXPECT_TRUE(ncclFailed);
  EXPECT_EQ(streams.groupEndCalls, 1);
}

TEST_F(TransferProtocolTest, AFailedCopyReachesNoNccl) {
  streams.copyResult = cudaErrorIllegalAddress;
  SendSlot *slot = slotOf(op1, 64);
  EXPECT_EQ(send(slot, arena, 1), WEFT_RT_INTERNAL);
  EXPECT_FALSE(ncclFailed);
  EXPECT_EQ(streams.groups, 0);
  EXPECT_TRUE(streams.ncclOps.empty());
  EXPECT_NE(std::string(weft_rt_context_error(ctx.get())).find("api.copy"),
            std::string::npos);
}

TEST_F(TransferProtocolTest, ASlotTooSmallIsInternal) {
  SendSlot *slot = slotOf(op1, 16);
  EXPECT_EQ(send(slot, arena, 1), WEFT_RT_INTERNAL);
  EXPECT_TRUE(streams.nodes.empty());
}

//===----------------------------------------------------------------------===//
// Which stream
//===----------------------------------------------------------------------===//

struct ChoiceCase {
  int version;
  const char *launchOrder;
  bool ownStream;
  bool setLaunchOrder;
  const char *reason;
};

class TransferStreamChoiceTest : public ::testing::TestWithParam<ChoiceCase> {};

TEST_P(TransferStreamChoiceTest, Chooses) {
  const ChoiceCase &c = GetParam();
  TransferStreamChoice choice = chooseTransferStream(c.version, c.launchOrder);
  EXPECT_EQ(choice.ownStream, c.ownStream);
  EXPECT_EQ(choice.setLaunchOrder, c.setLaunchOrder);
  EXPECT_NE(choice.reason.find(c.reason), std::string::npos) << choice.reason;
  EXPECT_EQ(choice.reason.empty(), c.ownStream) << choice.reason;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TransferStreamChoiceTest,
    ::testing::Values(
        ChoiceCase{22809, nullptr, true, true, ""},
        ChoiceCase{22600, nullptr, true, true, ""},
        ChoiceCase{22809, "1", true, false, ""},
        ChoiceCase{22809, "0x1", true, false, ""},
        ChoiceCase{22809, "2", true, false, ""},
        ChoiceCase{22809, "0", false, false,
                   "NCCL_LAUNCH_ORDER_IMPLICIT='0' turns"},
        ChoiceCase{22809, "", false, false, "NCCL_LAUNCH_ORDER_IMPLICIT=''"},
        ChoiceCase{22809, "yes", false, false, "='yes'"},
        ChoiceCase{22809, "99999999999999999999", false, false, "='9999"},
        ChoiceCase{22507, nullptr, false, false,
                   "NCCL 2.25.7 is older than 2.26"},
        ChoiceCase{22507, "1", false, false, "NCCL 2.25.7"},
        ChoiceCase{2804, nullptr, false, false, "NCCL 2.8.4 is older"}));

} // namespace
