/* The fabric as the ibqos model JSON (schema ibqos.fabric/1, see manager/ibqos/fabric/model.py). */
#ifndef IBQOS_READBACK_MODEL_JSON_H
#define IBQOS_READBACK_MODEL_JSON_H

#include <stdio.h>
#include "fabric.h"

int rb_write_model(FILE *out, const struct rb_fabric *f, const char *source);

#endif
