/* The libtracefs calls eventfs makes, for C++: libtracefs's own header has
 * inline functions that are not valid C++ (an int passed as an enum), so it
 * is included only by libtracefs_calls.c, which declares these in C. Each
 * returns what the libtracefs function of the same name does. */
#ifndef EVENTFS_LIBTRACEFS_CALLS_H
#define EVENTFS_LIBTRACEFS_CALLS_H

#ifdef __cplusplus
extern "C" {
#endif

struct tracefs_instance;

struct tracefs_instance* eventfs_tracefs_instance_alloc(const char* tracing_dir, const char* name);
void eventfs_tracefs_instance_free(struct tracefs_instance* instance);
int eventfs_tracefs_instance_destroy(struct tracefs_instance* instance);
char* eventfs_tracefs_instance_file_read(struct tracefs_instance* instance, const char* file, int* size);
int eventfs_tracefs_instance_file_append(struct tracefs_instance* instance, const char* file, const char* str);
int eventfs_tracefs_instance_file_clear(struct tracefs_instance* instance, const char* file);
/* options/<name> set to 0; -1 for an option libtracefs does not know. */
int eventfs_tracefs_option_disable(struct tracefs_instance* instance, const char* name);
char** eventfs_tracefs_event_systems(const char* tracing_dir);
char** eventfs_tracefs_system_events(const char* tracing_dir, const char* system);
void eventfs_tracefs_list_free(char** list);
char* eventfs_tracefs_event_file_read(struct tracefs_instance* instance, const char* system, const char* event,
                                      const char* file, int* size);
int eventfs_tracefs_event_file_append(struct tracefs_instance* instance, const char* system, const char* event,
                                      const char* file, const char* str);
int eventfs_tracefs_event_disable_all(struct tracefs_instance* instance);

#ifdef __cplusplus
}
#endif

#endif
