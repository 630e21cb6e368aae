/*===- lib_client.c - Embeds a model weftc compiled with --emit=lib -------===*\
|*                                                                          *|
|* A program as a user would write it against weft_model.h: creates a       *|
|* context and the model, checks its inputs and outputs against a case      *|
|* description, fills the inputs, runs twice and compares the outputs with  *|
|* the expected values. Also checks that bad requests fail with a status.   *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

/* Usage: lib_client WEIGHTS CASE_DIR [RTOL ATOL]
 *
 * CASE_DIR/case.txt has one line per tensor, inputs first, in model order:
 *   input|output NAME DTYPE RANK D0 ... D(RANK-1) FILE
 * where DTYPE is a weft_rt_dtype_name ("f32", "i64", ...) and FILE (in
 * CASE_DIR) holds the tensor's raw little-endian bytes. Outputs pass when
 * |got - expected| <= ATOL + RTOL * |expected| (defaults 1e-3, 1e-4), NaN
 * only where NaN; integer and bool outputs must be equal.
 *
 * Exit codes: 0 every check passed, 1 anything else (the reason is printed).
 */

#include "weft_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TENSORS 16
#define MAX_RANK 8
#define MAX_TEXT 256

typedef struct {
  int isInput;
  char name[MAX_TEXT];
  char dtype[MAX_TEXT];
  int rank;
  int64_t dims[MAX_RANK];
  void *data;
  size_t bytes;
} Tensor;

static int failures = 0;

/* Prints a failed check and counts it. */
static void failCheck(const char *what, const char *detail) {
  fprintf(stderr, "lib_client: FAIL: %s%s%s\n", what, detail ? ": " : "",
          detail ? detail : "");
  ++failures;
}

/* Reads the whole file at dir/name into a malloc'ed buffer. */
static void *readFile(const char *dir, const char *name, size_t *outBytes) {
  char path[2 * MAX_TEXT + 2];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "lib_client: cannot open %s\n", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *data = malloc(size > 0 ? (size_t)size : 1);
  if (!data || size < 0 || fread(data, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "lib_client: cannot read %s\n", path);
    free(data);
    fclose(f);
    return NULL;
  }
  fclose(f);
  *outBytes = (size_t)size;
  return data;
}

/* Parses CASE_DIR/case.txt; returns the tensor count, -1 on an error. */
static int readCase(const char *dir, Tensor *tensors) {
  char path[MAX_TEXT + 16];
  snprintf(path, sizeof(path), "%s/case.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "lib_client: cannot open %s\n", path);
    return -1;
  }
  int count = 0;
  char kind[MAX_TEXT], file[MAX_TEXT];
  while (fscanf(f, "%255s", kind) == 1) {
    if (count == MAX_TENSORS) {
      fprintf(stderr, "lib_client: %s: more than %d tensors\n", path,
              MAX_TENSORS);
      break;
    }
    Tensor *t = &tensors[count];
    memset(t, 0, sizeof(*t));
    t->isInput = strcmp(kind, "input") == 0;
    if ((!t->isInput && strcmp(kind, "output") != 0) ||
        fscanf(f, "%255s %255s %d", t->name, t->dtype, &t->rank) != 3 ||
        t->rank < 0 || t->rank > MAX_RANK) {
      fprintf(stderr, "lib_client: %s: bad line %d\n", path, count + 1);
      break;
    }
    int ok = 1;
    for (int d = 0; d < t->rank && ok; ++d)
      ok = fscanf(f, "%lld", (long long *)&t->dims[d]) == 1;
    if (!ok || fscanf(f, "%255s", file) != 1) {
      fprintf(stderr, "lib_client: %s: bad line %d\n", path, count + 1);
      break;
    }
    t->data = readFile(dir, file, &t->bytes);
    if (!t->data)
      break;
    ++count;
  }
  int complete = feof(f);
  fclose(f);
  if (!complete) {
    for (int i = 0; i < count; ++i)
      free(tensors[i].data);
    return -1;
  }
  return count;
}

/* Checks the model's description of a tensor against the case's. */
static void checkInfo(const weft_rt_tensor_info *info, const Tensor *t) {
  char detail[4 * MAX_TEXT];
  snprintf(detail, sizeof(detail), "%s %s", t->isInput ? "input" : "output",
           t->name);
  if (strcmp(info->name, t->name) != 0)
    failCheck("name differs (model has)", info->name);
  if (strcmp(weft_rt_dtype_name(info->dtype), t->dtype) != 0)
    failCheck("dtype differs", detail);
  int sameDims = info->rank == t->rank;
  for (int d = 0; sameDims && d < t->rank; ++d)
    sameDims = info->dims[d] == t->dims[d];
  if (!sameDims)
    failCheck("shape differs", detail);
  if (info->bytes != t->bytes)
    failCheck("byte size differs from the file's", detail);
}

/* Compares one output; prints its largest errors. */
static void compare(const void *got, const Tensor *t, weft_rt_dtype dtype,
                    double rtol, double atol, int run) {
  size_t size = weft_rt_dtype_size(dtype);
  size_t count = size ? t->bytes / size : 0;
  size_t bad = 0;
  double maxAbs = 0, maxRel = 0;
  for (size_t i = 0; i < count; ++i) {
    double g, e;
    if (dtype == WEFT_RT_F32) {
      g = ((const float *)got)[i];
      e = ((const float *)t->data)[i];
    } else if (dtype == WEFT_RT_F64) {
      g = ((const double *)got)[i];
      e = ((const double *)t->data)[i];
    } else {
      /* Integers and bools: byte-exact. */
      if (memcmp((const char *)got + i * size, (const char *)t->data + i * size,
                 size) != 0)
        ++bad;
      continue;
    }
    if (isnan(e) || isnan(g)) {
      bad += !(isnan(e) && isnan(g));
      continue;
    }
    double diff = fabs(g - e);
    if (diff > maxAbs)
      maxAbs = diff;
    if (e != 0 && diff / fabs(e) > maxRel)
      maxRel = diff / fabs(e);
    if (!(diff <= atol + rtol * fabs(e)))
      ++bad;
  }
  printf("run %d output %s: max abs err %.3g, max rel err %.3g, %zu/%zu "
         "mismatched\n",
         run, t->name, maxAbs, maxRel, bad, count);
  if (bad)
    failCheck("output mismatch", t->name);
}

int main(int argc, char **argv) {
  if (argc != 3 && argc != 5) {
    fprintf(stderr, "usage: lib_client WEIGHTS CASE_DIR [RTOL ATOL]\n");
    return 1;
  }
  /* Keep stdout and stderr in order when both go to one pipe (ctest). */
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *weights = argv[1], *caseDir = argv[2];
  double rtol = argc == 5 ? atof(argv[3]) : 1e-3;
  double atol = argc == 5 ? atof(argv[4]) : 1e-4;

  Tensor tensors[MAX_TENSORS];
  int count = readCase(caseDir, tensors);
  if (count < 0)
    return 1;
  int numInputs = 0;
  while (numInputs < count && tensors[numInputs].isInput)
    ++numInputs;

  weft_rt_context *ctx = NULL;
  if (weft_rt_context_create(&ctx) != WEFT_RT_OK || !ctx) {
    fprintf(stderr, "lib_client: weft_rt_context_create failed\n");
    return 1;
  }

  /* A missing weights file is an error with a message, not a crash. */
  weft_rt_model *model = NULL;
  weft_rt_status st =
      weft_rt_model_create(ctx, &weft_program, "/nonexistent/dev0.bin", &model);
  if (st == WEFT_RT_OK || weft_rt_context_error(ctx)[0] == '\0')
    failCheck("model_create accepted a missing weights file", NULL);
  else
    printf("missing weights refused: %s\n", weft_rt_context_error(ctx));
  weft_rt_model_destroy(model);
  model = NULL;

  /* So is a weights file of the wrong size (case.txt is one). */
  char wrongSize[MAX_TEXT + 16];
  snprintf(wrongSize, sizeof(wrongSize), "%s/case.txt", caseDir);
  st = weft_rt_model_create(ctx, &weft_program, wrongSize, &model);
  if (st == WEFT_RT_OK || weft_rt_context_error(ctx)[0] == '\0')
    failCheck("model_create accepted weights of the wrong size", NULL);
  else
    printf("wrong-size weights refused: %s\n", weft_rt_context_error(ctx));
  weft_rt_model_destroy(model);
  model = NULL;

  st = weft_rt_model_create(ctx, &weft_program, weights, &model);
  if (st != WEFT_RT_OK) {
    fprintf(stderr, "lib_client: weft_rt_model_create: %s\n",
            weft_rt_context_error(ctx));
    weft_rt_context_destroy(ctx);
    return 1;
  }
  if (weft_rt_model_num_inputs(model) != numInputs ||
      weft_rt_model_num_outputs(model) != count - numInputs)
    failCheck("input or output count differs from case.txt", NULL);

  weft_rt_tensor_info info;
  weft_rt_dtype outputDtypes[MAX_TENSORS] = {0};
  for (int i = 0; i < count && !failures; ++i) {
    int index = tensors[i].isInput ? i : i - numInputs;
    st = tensors[i].isInput ? weft_rt_model_input_info(model, index, &info)
                            : weft_rt_model_output_info(model, index, &info);
    if (st != WEFT_RT_OK) {
      failCheck("tensor info", weft_rt_context_error(ctx));
      continue;
    }
    checkInfo(&info, &tensors[i]);
    if (!tensors[i].isInput)
      outputDtypes[index] = info.dtype;
  }
  /* Indices out of range fail rather than read past the tables. */
  if (weft_rt_model_input_info(model, numInputs, &info) == WEFT_RT_OK ||
      weft_rt_model_output_info(model, -1, &info) == WEFT_RT_OK ||
      weft_rt_model_input_data(model, numInputs) != NULL)
    failCheck("an index out of range was accepted", NULL);

  /* Two runs: the second catches state a run leaves behind in the arena. */
  for (int run = 1; run <= 2 && !failures; ++run) {
    for (int i = 0; i < numInputs; ++i) {
      void *dst = weft_rt_model_input_data(model, i);
      if (!dst) {
        failCheck("weft_rt_model_input_data returned NULL", tensors[i].name);
        break;
      }
      memcpy(dst, tensors[i].data, tensors[i].bytes);
    }
    if (failures)
      break;
    if (weft_rt_model_run(model) != WEFT_RT_OK) {
      failCheck("weft_rt_model_run", weft_rt_context_error(ctx));
      break;
    }
    for (int i = numInputs; i < count; ++i) {
      const void *got = weft_rt_model_output_data(model, i - numInputs);
      if (!got) {
        failCheck("weft_rt_model_output_data returned NULL", tensors[i].name);
        continue;
      }
      compare(got, &tensors[i], outputDtypes[i - numInputs], rtol, atol, run);
    }
  }

  weft_rt_model_destroy(model);
  weft_rt_context_destroy(ctx);
  for (int i = 0; i < count; ++i)
    free(tensors[i].data);
  if (failures) {
    fprintf(stderr, "lib_client: %d check(s) failed\n", failures);
    return 1;
  }
  printf("lib_client: all checks passed (%d inputs, %d outputs, 2 runs)\n",
         numInputs, count - numInputs);
  return 0;
}
