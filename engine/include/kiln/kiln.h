/* kiln: a tensor engine with autograd for Vulkan, OpenCL and CPU.
 *
 * This umbrella header is all a program needs. The library never aborts or exits on bad
 * input: every call that can fail returns NULL or a kiln_status, and kiln_error_message()
 * says what went wrong in a sentence a person can act on. */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include "kiln/types.h"
#include "kiln/context.h"
#include "kiln/tensor.h"
#include "kiln/ops.h"
#include "kiln/autograd.h"
#include "kiln/optim.h"
#include "kiln/rng.h"
#include "kiln/probe.h"
#include "kiln/quant.h"
#include "kiln/verify.h"
#include "kiln/file.h"

#endif
