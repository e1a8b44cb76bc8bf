#ifndef AIRLOCK_CLIBYAML_SHIM_H
#define AIRLOCK_CLIBYAML_SHIM_H
/* Debian's libyaml (libyaml-dev): the YAML 1.1 parser AirlockYAML composes its nodes from.
   <features.h> first, as in CLibevent and COpenSSL. */
#include <features.h>
#include <yaml.h>
#endif
