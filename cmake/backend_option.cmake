# kiln_backend_option(<VAR> <doc> <found>): a backend's ON/OFF option that defaults to
# whether its SDK was found, and keeps following detection until the user chooses.
#
# A plain option() caches its first default: configuring once before installing the SDK
# (an easy order to get wrong on a fresh machine) would leave the backend OFF for good,
# silently. So the value detection gave is remembered too; while the option still holds
# that value, nobody has overridden it and it follows the SDK's presence at each configure.
# A value set with -D<VAR>=... differs from detection and is kept.
function(kiln_backend_option var doc found)
  if(found)
    set(found ON)
  else()
    set(found OFF)
  endif()
  set(follows_detection FALSE)
  if(NOT DEFINED CACHE{${var}})
    set(follows_detection TRUE)
  elseif(DEFINED CACHE{_${var}_DETECTED})
    # compare as booleans: the cache may hold ON, TRUE, 1, ...
    if((${var} AND _${var}_DETECTED) OR (NOT ${var} AND NOT _${var}_DETECTED))
      set(follows_detection TRUE)
    endif()
  endif()
  if(follows_detection)
    set(${var} ${found} CACHE BOOL "${doc}" FORCE)
  endif()
  set(_${var}_DETECTED ${found} CACHE INTERNAL "what SDK detection last said for ${var}")
endfunction()
