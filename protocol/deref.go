package protocol

import "reflect"

// deref turns the *T a constructor returned into the T value callers switch
// on, so type switches in reducers match value types only.
func deref(a Action) Action {
	v := reflect.ValueOf(a)
	if v.Kind() == reflect.Pointer {
		return v.Elem().Interface().(Action)
	}
	return a
}
