#include "tracefs/libtracefs_calls.h"

#include <errno.h>
#include <tracefs.h>

struct tracefs_instance* eventfs_tracefs_instance_alloc(const char* tracing_dir, const char* name) {
  return tracefs_instance_alloc(tracing_dir, name);
}

void eventfs_tracefs_instance_free(struct tracefs_instance* instance) { tracefs_instance_free(instance); }

int eventfs_tracefs_instance_destroy(struct tracefs_instance* instance) { return tracefs_instance_destroy(instance); }

char* eventfs_tracefs_instance_file_read(struct tracefs_instance* instance, const char* file, int* size) {
  return tracefs_instance_file_read(instance, file, size);
}

int eventfs_tracefs_instance_file_append(struct tracefs_instance* instance, const char* file, const char* str) {
  return tracefs_instance_file_append(instance, file, str);
}

int eventfs_tracefs_instance_file_clear(struct tracefs_instance* instance, const char* file) {
  return tracefs_instance_file_clear(instance, file);
}

int eventfs_tracefs_option_disable(struct tracefs_instance* instance, const char* name) {
  enum tracefs_option_id id = tracefs_option_id(name);
  if (id == TRACEFS_OPTION_INVALID) {
    errno = EINVAL;
    return -1;
  }
  return tracefs_option_disable(instance, id);
}

char** eventfs_tracefs_event_systems(const char* tracing_dir) { return tracefs_event_systems(tracing_dir); }

char** eventfs_tracefs_system_events(const char* tracing_dir, const char* system) {
  return tracefs_system_events(tracing_dir, system);
}

void eventfs_tracefs_list_free(char** list) { tracefs_list_free(list); }

char* eventfs_tracefs_event_file_read(struct tracefs_instance* instance, const char* system, const char* event,
                                      const char* file, int* size) {
  return tracefs_event_file_read(instance, system, event, file, size);
}

int eventfs_tracefs_event_file_append(struct tracefs_instance* instance, const char* system, const char* event,
                                      const char* file, const char* str) {
  return tracefs_event_file_append(instance, system, event, file, str);
}

int eventfs_tracefs_event_disable_all(struct tracefs_instance* instance) {
  return tracefs_event_disable(instance, NULL, NULL);
}
